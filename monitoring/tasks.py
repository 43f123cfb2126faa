"""The monitoring canary: a task an operator sends to check, end to end, that a worker takes tasks and
that its runs reach /metrics (``srcnet_celery_task_runs_total{task="monitoring.canary"}``); and the beat's
network accounting from the firefly collector's journal."""

from __future__ import annotations

import logging
import time
from typing import Any

from celery import shared_task

from .network_accounting import CollectorUnreachable, collector_url
from .network_accounting import account_flows as account


class CanaryFailed(RuntimeError):
    """Raised when the canary is asked to fail."""


@shared_task(name="monitoring.canary", bind=True, max_retries=1)
def canary(self: Any, seconds: float = 0.0, outcome: str = "succeeded") -> str:
    """Run for ``seconds``, then end as asked: ``succeeded``, ``failed`` (raises), or ``retried`` (asks
    Celery for one retry at once, which then succeeds)."""
    time.sleep(max(0.0, min(float(seconds), 60.0)))
    if outcome == "failed":
        raise CanaryFailed("the canary was asked to fail")
    if outcome == "retried":
        raise self.retry(countdown=0, kwargs={"seconds": seconds, "outcome": "succeeded"})
    return "ok"


@shared_task(name="monitoring.account_flows", ignore_result=True)
def account_flows() -> dict[str, int]:
    """Attribute the ended flows the firefly collector holds (nothing without SRCNET_FIREFLIES_URL). A
    collector that does not answer is logged and tried again at the next beat: its journal keeps the flows
    meanwhile (up to its ring's size; those lost are counted)."""
    if not collector_url():
        return {}
    try:
        run = account()
    except CollectorUnreachable as exc:
        logging.getLogger(__name__).warning("network accounting skipped: %s", exc)
        return {}
    return vars(run)
