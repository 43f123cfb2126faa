"""Who is calling the FTS3 endpoint: a bearer token (the platform's API tokens, or a JWT of a trusted token
issuer) or a client certificate.

Real FTS3 authenticates X.509 client certificates (Rucio's conveyor sends ``[conveyor] usercert``) and
OAuth2 bearer tokens: the ``fts3`` client's ``fts_access_token``, and the issuer's token that Rucio's
conveyor asks for (audience the FTS3 host, scope ``fts``) for RSEs with ``oidc_support``. Behind gunicorn
with TLS the verified peer certificate is read from the connection; its subject DN must be registered to a
user, as an issuer token's subject must be."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token

from ..models import ClientIdentity, TokenIdentity
from ..submitted_tokens import TokenRefused, verify_jwt
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
    """The caller, or AuthError: 401 without credentials, 403 with credentials we do not know."""
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if header:
        scheme, _, key = header.partition(" ")
        if scheme.lower() != "bearer" or not key.strip():
            raise AuthError("Authorization must be 'Bearer <token>'", 401)
        if key.strip().count(".") == 2:
            return issuer_token_caller(key.strip())
        token = Token.objects.select_related("user").filter(key=key.strip()).first()
        if token is None or not token.user.is_active:
            raise AuthError("Unknown or revoked token", 403)
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
    """The caller a token issuer's JWT names: signed by a trusted issuer, in its lifetime, meant for this
    endpoint (an audience of SRCNET_FTS3_TOKEN_AUDIENCES), granting ``fts``, its subject registered
    (TokenIdentity). 401 for a token that is not a valid credential here, 403 for a valid one of nobody we
    know or without the scope."""
    from django.conf import settings

    accepted = [str(a) for a in getattr(settings, "SRCNET_FTS3_TOKEN_AUDIENCES", [])]
    if not accepted:
        raise AuthError("This endpoint takes no issuer tokens (SRCNET_FTS3_TOKEN_AUDIENCES is empty)", 401)
    try:
        claims = verify_jwt(value)
    except TokenRefused as refused:
        raise AuthError(f"The token is refused: {refused}", 401) from refused
    audiences = claims.get("aud") or []
    audiences = [audiences] if isinstance(audiences, str) else [str(a) for a in audiences]
    if not set(audiences) & set(accepted):
        raise AuthError(
            f"The token is refused: its audience {', '.join(audiences) or '(none)'} is not this endpoint's"
            f" ({', '.join(accepted)})",
            401,
        )
    if FTS_SCOPE not in str(claims.get("scope", "")).split():
        raise AuthError(f"The token does not grant the {FTS_SCOPE!r} scope", 403)
    issuer, subject = str(claims["iss"]).rstrip("/"), str(claims.get("sub", ""))
    identity = TokenIdentity.objects.select_related("user").filter(issuer=issuer, subject=subject).first()
    if identity is None or not identity.user.is_active:
        raise AuthError(f"The token subject {subject!r} of {issuer} is not registered", 403)
    return Caller(identity.user, subject, "oauth2")
