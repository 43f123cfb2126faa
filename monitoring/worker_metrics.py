"""The Celery workers' own metrics: runs started and ended (by task and outcome) and their run time.

Workers are separate processes (a prefork pool, possibly on several hosts) with no HTTP server. Each task
run adds its figures to a hash on the platform's Redis (the broker every worker already talks to; one
round trip at the run's start, one pipelined at its end), keyed by the deployment's Celery queue; the
control plane's ``/metrics`` reads the hash at scrape time (``read``) and exports it
(``monitoring.collectors``), as it reads the database (docs/adr/0003). Increments are atomic in Redis, so
every pool process of every worker adds to the same figures; a worker's restart loses nothing. A Redis
restart without persistence starts them again from zero, which Prometheus treats as a counter reset.

Fields of the hash (``|`` separates the parts; task names have none):
``started|TASK``, ``runs|TASK|OUTCOME``, ``sum|TASK|OUTCOME`` (seconds), ``bucket|TASK|OUTCOME|LE`` (runs
whose time fell in that bucket only: the reader makes them cumulative)."""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

# From a dispatch sweep (milliseconds) to a long copy (an hour and more).
BUCKETS: tuple[float, ...] = (
    0.01,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    300.0,
    900.0,
    3600.0,
)

# Celery's state at the end of a run (task_postrun) -> the metric's outcome label.
OUTCOMES = {
    "SUCCESS": "succeeded",
    "FAILURE": "failed",
    "RETRY": "retried",
    "REJECTED": "rejected",
    "IGNORED": "ignored",
}

_started: dict[str, float] = {}


def key() -> str:
    from django.conf import settings

    return f"srcnet:celery-metrics:{settings.CELERY_TASK_DEFAULT_QUEUE}"


def redis_client() -> Any:
    """This process's client of the broker's Redis."""
    from srcnet.task_queue import broker_redis

    return broker_redis()


def bucket_label(seconds: float) -> str:
    for upper in BUCKETS:
        if seconds <= upper:
            return repr(upper)
    return "+Inf"


def record_start(task_name: str, task_id: str) -> None:
    _started[task_id] = time.monotonic()
    try:
        redis_client().hincrby(key(), f"started|{task_name}", 1)
    except Exception:  # metrics must never fail a task
        log.warning("worker metrics: could not record the start of %s", task_name, exc_info=True)


def record_end(task_name: str, task_id: str, state: str | None) -> None:
    began = _started.pop(task_id, None)
    if began is None:  # a run this process did not see start
        return
    seconds = time.monotonic() - began
    outcome = OUTCOMES.get(state or "", (state or "unknown").lower())
    prefix = f"{task_name}|{outcome}"
    try:
        pipe = redis_client().pipeline(transaction=False)
        pipe.hincrby(key(), f"runs|{prefix}", 1)
        pipe.hincrbyfloat(key(), f"sum|{prefix}", seconds)
        pipe.hincrby(key(), f"bucket|{prefix}|{bucket_label(seconds)}", 1)
        pipe.execute()
    except Exception:
        log.warning("worker metrics: could not record the end of %s", task_name, exc_info=True)


def _on_prerun(sender: Any = None, task_id: str | None = None, task: Any = None, **_: Any) -> None:
    if task is not None and task_id is not None:
        record_start(task.name, task_id)


def _on_postrun(
    sender: Any = None, task_id: str | None = None, task: Any = None, state: str | None = None, **_: Any
) -> None:
    if task is not None and task_id is not None:
        record_end(task.name, task_id, state)


def connect() -> None:
    """Record every task this worker runs (called once in the worker's main process, before the pool
    forks: the children inherit the receivers)."""
    from celery.signals import task_postrun, task_prerun

    task_prerun.connect(_on_prerun, weak=False, dispatch_uid="srcnet-worker-metrics-prerun")
    task_postrun.connect(_on_postrun, weak=False, dispatch_uid="srcnet-worker-metrics-postrun")


@dataclass
class TaskFigures:
    started: float = 0.0
    runs: dict[str, float] = field(default_factory=dict)  # outcome -> runs
    sums: dict[str, float] = field(default_factory=dict)  # outcome -> seconds
    buckets: dict[str, dict[str, float]] = field(default_factory=dict)  # outcome -> le -> runs in it

    def cumulative(self, outcome: str) -> list[tuple[str, float]]:
        """The histogram's cumulative buckets of ``outcome``, ending with +Inf (= the runs)."""
        own = self.buckets.get(outcome, {})
        total, out = 0.0, []
        for upper in BUCKETS:
            total += own.get(repr(upper), 0.0)
            out.append((repr(upper), total))
        out.append(("+Inf", total + own.get("+Inf", 0.0)))
        return out


def read() -> dict[str, TaskFigures]:
    """Every task's figures as the workers recorded them (one HGETALL)."""
    raw = redis_client().hgetall(key())
    tasks: dict[str, TaskFigures] = {}
    for name, value in raw.items():
        parts = name.decode().split("|")
        number = float(value)
        if not math.isfinite(number):
            continue
        figures = tasks.setdefault(parts[1], TaskFigures())
        if parts[0] == "started" and len(parts) == 2:
            figures.started = number
        elif parts[0] == "runs" and len(parts) == 3:
            figures.runs[parts[2]] = number
        elif parts[0] == "sum" and len(parts) == 3:
            figures.sums[parts[2]] = number
        elif parts[0] == "bucket" and len(parts) == 4:
            figures.buckets.setdefault(parts[2], {})[parts[3]] = number
    return tasks
