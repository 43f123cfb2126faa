"""The REST API's token authentication: a personal API token (``Authorization: Bearer <key>``, or ``Token
<key>`` as before) or a token issuer's JWT (``Bearer``) meant for the API. ``request.auth`` is then a
``Grant`` whose scope ``srcnet.api.permissions`` holds every request to."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed, PermissionDenied

from .issuer_tokens import IssuerTokenRefused, account_of, api_scope, looks_like_jwt
from .models import TokenScope
from .tokens import Grant, live_token, record_use, why_refused

SCHEMES = ("bearer", "token")


class PlatformTokenAuthentication(BaseAuthentication):
    def authenticate(self, request: Any) -> tuple[Any, Grant] | None:
        header = get_authorization_header(request).decode("latin-1")
        scheme, _, value = header.partition(" ")
        if scheme.lower() not in SCHEMES:
            return None  # no token (a session, or nothing): the next authenticator's to judge
        value = value.strip()
        if not value or " " in value:
            raise AuthenticationFailed("Authorization must be 'Bearer <token>'.")
        if scheme.lower() == "bearer" and looks_like_jwt(value):
            return self._issuer_token(value)
        token = live_token(value)
        if token is None:
            raise AuthenticationFailed(f"{why_refused(value)}.")
        if token.scope == TokenScope.FTS3:
            raise PermissionDenied(
                "This token's scope is 'fts3': it opens the FTS3 endpoint, not the REST API."
            )
        record_use(token, request.META.get("REMOTE_ADDR"))
        return token.user, Grant(scope=token.scope, source="personal", token_id=token.pk)

    def _issuer_token(self, value: str) -> tuple[Any, Grant]:
        audiences = [str(a) for a in getattr(settings, "SRCNET_API_TOKEN_AUDIENCES", [])]
        try:
            user, claims = account_of(
                value, audiences=audiences, setting="SRCNET_API_TOKEN_AUDIENCES", sign_on=True
            )
        except IssuerTokenRefused as refused:
            if refused.status == 401:
                raise AuthenticationFailed(str(refused)) from refused
            raise PermissionDenied(str(refused)) from refused
        scope = api_scope(claims)
        if scope is None:
            raise PermissionDenied(
                "The token grants none of the REST API's scopes (srcnet.read, srcnet.rules, srcnet.operate)."
            )
        return user, Grant(scope=scope, source="issuer")

    def authenticate_header(self, request: Any) -> str:
        # A 401 (not a 403) for a missing or refused token: the client is told to authenticate.
        return 'Bearer realm="srcnet"'
