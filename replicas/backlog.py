"""How many products may wait at a telescope's SDP, and how long a registration refused for it should wait.

A burst of registrations (an SDP's client catching up, 100 000 products at once) must not grow the queue the
push cycle plans without bound, and must lose nothing: past ``SRCNET_REGISTRATION_BACKLOG`` products waiting
at one telescope the REST API answers 429 with a ``Retry-After`` (the client keeps the products and sends
them again; nothing was written), the wait being how long the excess takes to drain at the rate products
left that SDP recently.

The count is read at most once a second per process and telescope (``COUNT`` over a million rows costs tens
of milliseconds): the bound is soft by what one second of registrations adds."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from topology.models import Telescope

from .choices import ProductState
from .models import DataProduct, Replica

# What the drain rate is measured over, and the bounds of the wait a refusal names.
DRAIN_WINDOW = timedelta(minutes=10)
MIN_WAIT_SECONDS = 1
MAX_WAIT_SECONDS = 3600
NO_RATE_WAIT_SECONDS = 60  # nothing left the SDP in the window: ask again in a minute
COUNT_TTL_SECONDS = 1.0

_counts: dict[int, tuple[float, int]] = {}


@dataclass
class BacklogFull(Exception):
    """The telescope's SDP queue is full: the registration is refused, nothing written."""

    telescope: str
    waiting: int
    limit: int
    retry_after: int

    def __str__(self) -> str:
        return (
            f"{self.waiting} products wait at {self.telescope}'s SDP (the bound is {self.limit}, "
            f"SRCNET_REGISTRATION_BACKLOG): register again in {self.retry_after} s"
        )


def waiting_at(telescope: Telescope) -> int:
    """Products registered at ``telescope`` and not yet handed on (read at most once a second)."""
    now = time.monotonic()
    cached = _counts.get(telescope.pk)
    if cached is not None and now - cached[0] < COUNT_TTL_SECONDS:
        return cached[1]
    count = DataProduct.objects.filter(telescope=telescope, state=ProductState.REGISTERED).count()
    _counts[telescope.pk] = (now, count)
    return count


def drain_rate(telescope: Telescope) -> float:
    """Products of ``telescope`` handed on per second over the last ``DRAIN_WINDOW``: those that got their
    first copy (a replica away from the SDP with no upstream; a second copy has one) in it, in either mode."""
    since = timezone.now() - DRAIN_WINDOW
    left = (
        Replica.objects.filter(product__telescope=telescope, created__gte=since, upstream__isnull=True)
        .exclude(endpoint=F("product__source"))
        .values("product")
        .distinct()
        .count()
    )
    return left / DRAIN_WINDOW.total_seconds()


def admit(telescope: Telescope, count: int = 1) -> None:
    """Raise ``BacklogFull`` if ``count`` more products would take ``telescope``'s waiting products past the
    bound; the wait it names is the excess over the recent drain rate, within 1 s and an hour."""
    limit = settings.SRCNET_REGISTRATION_BACKLOG
    waiting = waiting_at(telescope)
    if waiting + count <= limit:
        _counts[telescope.pk] = (_counts[telescope.pk][0], waiting + count)  # this process's own adds
        return
    rate = drain_rate(telescope)
    excess = waiting + count - limit
    wait = math.ceil(excess / rate) if rate > 0 else NO_RATE_WAIT_SECONDS
    raise BacklogFull(telescope.name, waiting, limit, min(MAX_WAIT_SECONDS, max(MIN_WAIT_SECONDS, wait)))
