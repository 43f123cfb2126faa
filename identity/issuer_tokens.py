"""A token issuer's JWT presented to the platform (the REST API or the FTS3 endpoint): whose it is.

The token must be signed by a trusted issuer (``SRCNET_TOKENS["TRUSTED_ISSUERS"]``), within its lifetime,
meant for the endpoint (one of its audiences), and its subject registered to an account
(``transfers.models.TokenIdentity``: made at the account's single sign-on, or by an admin with
``manage.py fts3_identity --issuer``). What it may do is its scopes' business, judged by the caller."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from transfers.models import TokenIdentity
from transfers.submitted_tokens import TokenRefused, verify_jwt

from .sso import NoAccess, account_for, groups_of, sso_settings

# The REST API's scopes in an issuer's tokens, narrowest first (identity.models.TokenScope's names).
API_SCOPES = {"srcnet.read": "read", "srcnet.rules": "rules", "srcnet.operate": "operate"}


class IssuerTokenRefused(Exception):
    """401: not a valid credential here; 403: a valid one, of nobody known or without the scope."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def looks_like_jwt(value: str) -> bool:
    return value.count(".") == 2


def scopes_of(claims: dict[str, Any]) -> list[str]:
    return str(claims.get("scope", "")).split()


def account_of(
    value: str, *, audiences: list[str], setting: str, sign_on: bool = False
) -> tuple[Any, dict[str, Any]]:
    """The active account an issuer token names and its claims, or IssuerTokenRefused. With ``sign_on`` (the
    REST API), a person of the sign-on issuer gets their account as at the portal's sign-on."""
    if not audiences:
        raise IssuerTokenRefused(f"This endpoint takes no issuer tokens ({setting} is empty)", 401)
    try:
        claims = verify_jwt(value)
    except TokenRefused as refused:
        raise IssuerTokenRefused(f"The token is refused: {refused}", 401) from refused
    named = claims.get("aud") or []
    named = [named] if isinstance(named, str) else [str(a) for a in named]
    if not set(named) & set(audiences):
        raise IssuerTokenRefused(
            f"The token is refused: its audience {', '.join(named) or '(none)'} is not this endpoint's"
            f" ({', '.join(audiences)})",
            401,
        )
    issuer, subject = str(claims["iss"]).rstrip("/"), str(claims.get("sub", ""))
    conf = sso_settings()
    if sign_on and conf.enabled and issuer == conf.issuer and _first_sight(claims):
        # A person of the sign-on issuer: their account and role from the token's groups, as at the
        # portal's sign-on (once per token: its groups do not change while it lives).
        try:
            return account_for(issuer, claims, groups_of(claims, conf.groups_claim)), claims
        except NoAccess as refused:
            raise IssuerTokenRefused(f"The token gives no access here: {refused}", 403) from refused
    identity = TokenIdentity.objects.select_related("user").filter(issuer=issuer, subject=subject).first()
    if identity is None or not identity.user.is_active:
        raise IssuerTokenRefused(f"The token subject {subject!r} of {issuer} is not registered", 403)
    return identity.user, claims


_seen: OrderedDict[str, None] = OrderedDict()
_seen_lock = threading.Lock()
SEEN_TOKENS = 4096


def _first_sight(claims: dict[str, Any]) -> bool:
    """True the first time this process sees a token (by its jti, else its subject and issue time)."""
    name = str(claims.get("jti") or f"{claims.get('sub')}@{claims.get('iat')}")
    with _seen_lock:
        if name in _seen:
            return False
        _seen[name] = None
        while len(_seen) > SEEN_TOKENS:
            _seen.popitem(last=False)
    return True


def api_scope(claims: dict[str, Any]) -> str | None:
    """The broadest REST API scope the token grants (``read``, ``rules``, ``operate``), or None."""
    granted = [API_SCOPES[s] for s in scopes_of(claims) if s in API_SCOPES]
    order = list(API_SCOPES.values())
    return max(granted, key=order.index) if granted else None
