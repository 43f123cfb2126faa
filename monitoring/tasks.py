"""The monitoring canary: a task an operator sends to check, end to end, that a worker takes tasks and
that its runs reach /metrics (``srcnet_celery_task_runs_total{task="monitoring.canary"}``)."""

from __future__ import annotations

import time
from typing import Any

from celery import shared_task


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
