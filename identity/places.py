"""Which sign-in place a request is (``SignInPlace``), by the URL that answered it."""

from __future__ import annotations

from django.http import HttpRequest

from .models import SignInPlace

_BY_URL_NAME = {
    "login": SignInPlace.PORTAL,
    "admin-login": SignInPlace.ADMIN,
    "api-token": SignInPlace.API_TOKEN,
}


def place_of(request: HttpRequest) -> str:
    match = request.resolver_match
    name = match.url_name if match is not None else None
    return str(_BY_URL_NAME.get(name or "", SignInPlace.PORTAL))
