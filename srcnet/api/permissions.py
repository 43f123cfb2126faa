"""Who may do what through the API: any authenticated user reads, staff (operators) write."""

from rest_framework.permissions import SAFE_METHODS, BasePermission


class ReadAnyAuthenticatedWriteStaff(BasePermission):
    """Anonymous users see nothing; scientists read; operators (staff) change state."""

    def has_permission(self, request, view):  # type: ignore[no-untyped-def]
        user = request.user
        if not (user and user.is_authenticated):
            return False
        return request.method in SAFE_METHODS or bool(user.is_staff)
