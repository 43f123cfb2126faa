"""Local passwords: everyone's while there is no single sign-on; with it, only admins' (the bootstrap admin
who sets the sign-on up, and a way in when the issuer is down). Everyone else signs on through the issuer."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.backends import ModelBackend
from django.http import HttpRequest

from .sso import sso_settings


class LocalPasswordBackend(ModelBackend):
    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> Any:
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is not None and sso_settings().enabled and not user.is_superuser:
            return None  # counted as a failed sign-in, as a wrong password is
        return user
