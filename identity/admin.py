from django.contrib import admin

from .models import SignInFailure


@admin.register(SignInFailure)
class SignInFailureAdmin(admin.ModelAdmin):
    """Read-only: the failures are the web servers' to record; an admin reads them (and may delete one to lift
    a lock early)."""

    list_display = ("at", "username", "address", "place")
    list_filter = ("place",)
    search_fields = ("username", "address")
    readonly_fields = ("at", "username", "address", "place")

    def has_add_permission(self, request) -> bool:  # type: ignore[no-untyped-def]
        return False

    def has_change_permission(self, request, obj=None) -> bool:  # type: ignore[no-untyped-def]
        return False
