"""Who may do what through the API (the roles are defined in srcnet.roles), and what the token that
authenticated a request lets it do (its scope, ``identity.models.TokenScope``): every permission below
holds a request to both."""

from typing import Any

from rest_framework.permissions import SAFE_METHODS, BasePermission

from identity.tokens import Grant
from srcnet.roles import Role, role_of


def within_token_scope(request: Any, view: Any) -> bool:
    """A session, or a token whose scope covers the request: any scope reads; a ``rules`` token writes only
    to views that say ``token_scope = "rules"`` (a scientist's own rules and subscriptions); an ``operate``
    token writes wherever the account's role may."""
    grant = request.auth
    if not isinstance(grant, Grant) or grant.scope == "operate" or request.method in SAFE_METHODS:
        return True
    return grant.scope == "rules" and getattr(view, "token_scope", "operate") == "rules"


class TokenScoped(BasePermission):
    """Refuses what the request's token does not open (the message names its scope)."""

    message = "This token's scope does not allow this request."

    def has_permission(self, request, view):  # type: ignore[no-untyped-def]
        allowed = within_token_scope(request, view)
        if not allowed:
            self.message = (
                f"This token's scope is {request.auth.scope!r}: it does not allow {request.method} here"
                " (a token of scope 'operate' does; 'rules' writes only rules and subscriptions)."
            )
        return allowed


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


class AnyAccount(BasePermission):
    """Any authenticated account (for a scientist's own rules and subscriptions: the views keep to the
    owner's)."""

    def has_permission(self, request, view):  # type: ignore[no-untyped-def]
        return role_of(request.user) > Role.ANONYMOUS
