"""How many sign-ins may fail before an account, or an address, has to wait.

A password guessed at one account (``SRCNET_SIGN_IN_FAILURES_PER_ACCOUNT`` failures from one address within
``SRCNET_SIGN_IN_WINDOW_SECONDS``) or sprayed over many (``SRCNET_SIGN_IN_FAILURES_PER_ADDRESS`` from one
address) locks that account at that address, or that address, until the oldest of those failures leaves the
window: every sign-in there, the right password included, is then answered 429 with the wait. The failures
live in the database, so every web server process of a deployment counts the same ones; each is a warning
of the ``srcnet.sign_in`` log and a count of the ``srcnet_sign_in_failures_total`` metric, and each refusal
one of ``srcnet_sign_in_refusals_total``. A sign-in that succeeds forgets its account's failures at that
address."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from prometheus_client import Counter

from .models import SignInFailure

log = logging.getLogger("srcnet.sign_in")

FAILURES = Counter("srcnet_sign_in_failures", "Sign-ins whose password did not match", ["place"])
REFUSALS = Counter(
    "srcnet_sign_in_refusals", "Sign-ins refused, unchecked, while a limit held", ["place", "limit"]
)


@dataclass(frozen=True)
class Lock:
    """A limit that holds: which (``account`` or ``address``) and for how many more seconds."""

    limit: str
    seconds: int

    def message(self) -> str:
        whom = "this account from your address" if self.limit == "account" else "your address"
        return f"Too many failed sign-ins for {whom}: try again in {minutes(self.seconds)}."


def minutes(seconds: int) -> str:
    return f"{seconds} s" if seconds < 120 else f"{(seconds + 59) // 60} min"


def window() -> timedelta:
    return timedelta(seconds=int(settings.SRCNET_SIGN_IN_WINDOW_SECONDS))


def client_address(request: HttpRequest) -> str:
    """The address the request came from. The platform's web server faces its clients itself (no proxy in
    front, see docs/deployment.md), so the connection's own address is the client's."""
    return str(request.META.get("REMOTE_ADDR") or "0.0.0.0")


def normalised(username: object) -> str:
    """The user name as kept and compared: lower-cased, at most 150 characters, without NUL (which
    PostgreSQL's text refuses; a request may carry anything)."""
    return str(username or "").replace("\x00", "").strip().lower()[:150]


def lock_for(address: str, username: object) -> Lock | None:
    """The limit that holds for a sign-in as ``username`` from ``address`` now, if any."""
    now = timezone.now()
    recent = SignInFailure.objects.filter(address=address, at__gte=now - window())
    limits = (
        (
            "account",
            recent.filter(username=normalised(username)),
            int(settings.SRCNET_SIGN_IN_FAILURES_PER_ACCOUNT),
        ),
        ("address", recent, int(settings.SRCNET_SIGN_IN_FAILURES_PER_ADDRESS)),
    )
    for name, failures, allowed in limits:
        seconds = _seconds_left(failures, allowed, now)
        if seconds is not None:
            return Lock(name, seconds)
    return None


def _seconds_left(failures: QuerySet[SignInFailure], allowed: int, now: object) -> int | None:
    """With ``allowed`` or more of ``failures`` in the window: the seconds until the ``allowed``-th most
    recent leaves it (then fewer than ``allowed`` remain)."""
    times = list(failures.order_by("-at").values_list("at", flat=True)[:allowed])
    if len(times) < allowed:
        return None
    left = (times[-1] + window() - now).total_seconds()  # type: ignore[operator]
    return max(1, int(left + 0.999))


def refused(request: HttpRequest, place: str, lock: Lock, username: object) -> None:
    REFUSALS.labels(place, lock.limit).inc()
    log.warning(
        "sign-in refused for %r from %s at %s: the %s limit holds for %d s more",
        normalised(username), client_address(request), place, lock.limit, lock.seconds,
    )  # fmt: skip


def record_failure(request: HttpRequest, place: str, username: object) -> None:
    """Keep a failed sign-in (and drop those too old to count)."""
    now = timezone.now()
    address, name = client_address(request), normalised(username)
    SignInFailure.objects.filter(at__lt=now - window()).delete()
    SignInFailure.objects.create(at=now, address=address, username=name, place=place)
    FAILURES.labels(place).inc()
    count = SignInFailure.objects.filter(address=address, username=name, at__gte=now - window()).count()
    allowed, seconds = int(settings.SRCNET_SIGN_IN_FAILURES_PER_ACCOUNT), int(window().total_seconds())
    log.warning(
        "sign-in failed for %r from %s at %s (%d of %d allowed within %d s)",
        name, address, place, count, allowed, seconds,
    )  # fmt: skip


def forget_failures(request: HttpRequest, username: object) -> None:
    """After a sign-in that succeeded: its account's failures at that address no longer count."""
    SignInFailure.objects.filter(address=client_address(request), username=normalised(username)).delete()
