"""Celery tasks of the replicas app (thin: they call the Rucio adapter)."""

from __future__ import annotations

import os
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
    try:
        report = RucioAdapter.from_env().follow_rules(since=since)
    except RucioAdapterError as exc:
        return {"error": str(exc)}
    return {"products": report.products, "replicas": report.replicas, "errors": report.errors}
