"""Who may do what through the API (the roles are defined in srcnet.roles)."""

from rest_framework.permissions import SAFE_METHODS, BasePermission

from srcnet.roles import Role, role_of


class _ReadAnyAuthenticatedWriteFrom(BasePermission):
    """Anonymous users see nothing; every account reads; writes need ``write_role`` or above."""

    write_role = Role.OPERATOR

    def has_permission(self, request, view):  # type: ignore[no-untyped-def]
        role = role_of(request.user)
        if role == Role.ANONYMOUS:
            return False
        return request.method in SAFE_METHODS or role >= self.write_role


class ReadAnyAuthenticatedWriteStaff(_ReadAnyAuthenticatedWriteFrom):
    """Scientists read; operators change the network's state."""

    write_role = Role.OPERATOR


class ReadAnyAuthenticatedWriteAdmin(_ReadAnyAuthenticatedWriteFrom):
    """Scientists and operators read; only admins change the service's configuration."""

    write_role = Role.ADMIN


class OperatorsOnly(BasePermission):
    """Only operators (and admins): for actions that reach beyond the platform (the token doctor asks the
    issuer for tokens and tries them at the storage sites)."""

    def has_permission(self, request, view):  # type: ignore[no-untyped-def]
        return role_of(request.user) >= Role.OPERATOR
