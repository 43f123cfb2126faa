"""Django's sign-in signals, for every place that checks a password (the portal's and the admin site's login
pages, the REST API's token endpoint): a failure is kept and counted, a success forgets its account's."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.dispatch import receiver
from django.http import HttpRequest

from .limits import forget_failures, record_failure
from .places import place_of


@receiver(user_login_failed)
def _failed(sender: Any, credentials: dict[str, Any], request: HttpRequest | None = None, **_: Any) -> None:
    if request is None:  # not a sign-in over HTTP (a management command, a test's client.login)
        return
    record_failure(request, place_of(request), credentials.get("username"))


@receiver(user_logged_in)
def _succeeded(sender: Any, request: HttpRequest | None, user: Any, **_: Any) -> None:
    if request is not None:
        forget_failures(request, user.get_username())
