from django.contrib import admin

from .models import ApiToken, GroupMapping, SignInFailure
from .tokens import revoke


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


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Every account's personal tokens: an admin reads and revokes them (the key is never stored, so never
    shown); tokens are made by their owners (the API, ``manage.py api_token``)."""

    list_display = ("name", "user", "scope", "prefix", "created", "expires", "last_used", "revoked")
    list_filter = ("scope",)
    search_fields = ("name", "user__username", "prefix")
    readonly_fields = [f.name for f in ApiToken._meta.fields]
    actions = ["revoke_selected"]

    def has_add_permission(self, request) -> bool:  # type: ignore[no-untyped-def]
        return False

    def has_change_permission(self, request, obj=None) -> bool:  # type: ignore[no-untyped-def]
        return False

    @admin.action(description="Revoke the selected tokens")
    def revoke_selected(self, request, queryset) -> None:  # type: ignore[no-untyped-def]
        revoked = sum(revoke(token, request.user) for token in queryset)
        self.message_user(request, f"{revoked} token(s) revoked.")


@admin.register(GroupMapping)
class GroupMappingAdmin(admin.ModelAdmin):
    """The sign-on issuer's groups and what they give here (identity.sso): taken at every sign-on."""

    list_display = ("group", "role", "project")
    list_filter = ("role",)
    search_fields = ("group", "project__code")
