"""Celery tasks of the replicas app (thin: they call the Rucio adapter)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.utils import timezone


def rucio_configured() -> bool:
    """A Rucio server is configured when ``SRCNET_RUCIO_URL`` is set (``RucioAdapter.from_env``)."""
    return bool(os.environ.get("SRCNET_RUCIO_URL"))


@shared_task(name="replicas.follow_rucio_rules")
def follow_rucio_rules() -> dict[str, object]:
    """Follow Rucio's rules into replicas: every product whose rules changed in the last
    ``SRCNET_RUCIO_FOLLOW_WINDOW`` seconds (several beat intervals, so a late or missed round loses
    nothing), products still being placed, and the rules scientists created themselves. Does nothing
    when no Rucio server is configured."""
    if not rucio_configured():
        return {"skipped": "no Rucio server configured (SRCNET_RUCIO_URL)"}
    from .rucio import RucioAdapter, RucioAdapterError

    since = timezone.now() - timedelta(seconds=float(settings.SRCNET_RUCIO_FOLLOW_WINDOW))
    with one_round_at_a_time() as alone:
        if not alone:
            return {"skipped": "a round is running (the beat's next one follows what it leaves)"}
        try:
            report = RucioAdapter.from_env().follow_rules(since=since)
        except RucioAdapterError as exc:
            return {"error": str(exc)}
    _next_push_cycle()
    return {"products": report.products, "replicas": report.replicas, "errors": report.errors}


# A session-level advisory lock: one round at a time across every worker; released at the round's end, or
# by PostgreSQL when the connection of a process that died closes.
FOLLOW_LOCK = 0x5352_4652  # any constant the platform uses for nothing else


@contextmanager
def one_round_at_a_time() -> Iterator[bool]:
    """True inside when this round holds the follower's lock; False when another round holds it. Rounds
    that overlapped (each begun by the beat while the one before still ran) took every worker process
    at a file rate, and did the same work twice."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [FOLLOW_LOCK])
        alone = bool(cursor.fetchone()[0])
    try:
        yield alone
    finally:
        if alone:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [FOLLOW_LOCK])


def _next_push_cycle() -> None:
    """In Rucio mode no push job of ours ends to free a lane: a rule the round saw finish did. So while
    products wait at the SDPs, each round asks for a push cycle (by name: replicas does not import the
    scheduler, which imports replicas)."""
    from celery import current_app

    from .choices import ProductState
    from .models import DataProduct

    rucio_mode = str(getattr(settings, "SRCNET_PUSH_THROUGH", "")).lower() == "rucio"
    queued = DataProduct.objects.filter(state=ProductState.REGISTERED)
    if rucio_mode and settings.SRCNET_PUSH_ON_SETTLE and queued.exists():
        current_app.send_task("schedulers.push_cycle")
