"""Who is calling the FTS3 endpoint: a bearer token (a personal API token of scope ``fts3``, or a JWT of a
trusted token issuer) or a client certificate.

Real FTS3 authenticates X.509 client certificates (Rucio's conveyor sends ``[conveyor] usercert``) and
OAuth2 bearer tokens: the ``fts3`` client's ``fts_access_token``, and the issuer's token that Rucio's
conveyor asks for (audience the FTS3 host, scope ``fts``) for RSEs with ``oidc_support``. Behind gunicorn
with TLS the verified peer certificate is read from the connection; its subject DN must be registered to a
user, as an issuer token's subject must be."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User

from identity.issuer_tokens import IssuerTokenRefused, account_of, looks_like_jwt, scopes_of
from identity.models import TokenScope
from identity.tokens import live_token, record_use, why_refused

from ..models import ClientIdentity
from ..tokens import FTS_SCOPE


@dataclass(frozen=True)
class Caller:
    user: User
    dn: str
    method: str  # "oauth2" or "certificate"


class AuthError(Exception):
    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def token_dn(username: str) -> str:
    """The DN FTS3 would show for a token user."""
    return f"/DC=org/DC=srcnet/CN={username}"


def certificate_dn(peer: dict[str, Any]) -> str:
    """An OpenSSL-style subject DN (``/O=x/CN=y``) from ``ssl.getpeercert()``'s subject."""
    parts = []
    names = {
        "organizationName": "O",
        "commonName": "CN",
        "domainComponent": "DC",
        "countryName": "C",
        "organizationalUnitName": "OU",
        "localityName": "L",
    }
    for rdn in peer.get("subject", ()):
        for key, value in rdn:
            parts.append(f"/{names.get(key, key)}={value}")
    return "".join(parts)


def _peer_certificate(request: Any) -> dict[str, Any] | None:
    sock = request.META.get("gunicorn.socket")
    getpeercert = getattr(sock, "getpeercert", None)
    if getpeercert is None:
        return None
    try:
        return getpeercert() or None
    except ValueError:
        return None


def authenticate(request: Any) -> Caller:
    """The caller, or AuthError: 401 without a valid credential, 403 with one we do not know or that does not
    open this endpoint (a personal token of another scope than ``fts3``)."""
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if header:
        scheme, _, key = header.partition(" ")
        key = key.strip()
        if scheme.lower() != "bearer" or not key:
            raise AuthError("Authorization must be 'Bearer <token>'", 401)
        if looks_like_jwt(key):
            return issuer_token_caller(key)
        token = live_token(key)
        if token is None:
            raise AuthError(why_refused(key), 401)
        if token.scope != TokenScope.FTS3:
            raise AuthError(
                f"This token's scope is {token.scope!r}: the FTS3 endpoint takes tokens of scope 'fts3'", 403
            )
        record_use(token, request.META.get("REMOTE_ADDR"))
        return Caller(token.user, token_dn(token.user.get_username()), "oauth2")
    peer = _peer_certificate(request)
    if peer:
        dn = certificate_dn(peer)
        identity = ClientIdentity.objects.select_related("user").filter(dn=dn).first()
        if identity is None or not identity.user.is_active:
            raise AuthError(f"The certificate {dn} is not registered", 403)
        return Caller(identity.user, dn, "certificate")
    raise AuthError("Authentication required: a bearer token or a client certificate", 401)


def issuer_token_caller(value: str) -> Caller:
    """The caller a token issuer's JWT names (identity.issuer_tokens), meant for this endpoint (an audience
    of SRCNET_FTS3_TOKEN_AUDIENCES) and granting ``fts``."""
    from django.conf import settings

    accepted = [str(a) for a in getattr(settings, "SRCNET_FTS3_TOKEN_AUDIENCES", [])]
    try:
        user, claims = account_of(value, audiences=accepted, setting="SRCNET_FTS3_TOKEN_AUDIENCES")
    except IssuerTokenRefused as refused:
        raise AuthError(str(refused), refused.status) from refused
    if FTS_SCOPE not in scopes_of(claims):
        raise AuthError(f"The token does not grant the {FTS_SCOPE!r} scope", 403)
    return Caller(user, str(claims.get("sub", "")), "oauth2")
