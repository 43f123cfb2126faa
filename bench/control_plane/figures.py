"""What an end-to-end run of the control plane achieved, read from the platform's own rows afterwards: the
files accounted for, the rate, the latency from registration to AVAILABLE and where a file's time went.

A file's stages (each a difference of timestamps the platform writes anyway):
  wait_for_plan   product registered -> its copy request submitted (the push loop planned and submitted it)
  queued          job created -> the file's first attempt claimed by a worker (dispatch, Celery's queue)
  copying         first claim -> last attempt finished (the executor: gfal2, checks, retries between)
  settling        last attempt finished -> the copy request settled (the job's end reached the replica)
"""

from __future__ import annotations

import datetime as dt
import re
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

# Celery's line for each task it ran: "Task transfers.dispatch[<id>] succeeded in 0.0123s: ..."
_TASK_LINE = re.compile(r"Task ([\w.]+)\[[^\]]+\] (?:succeeded|raised|retry)\S* in ([0-9.]+)s")


def percentile(values: list[float], share: float) -> float:
    """The nearest-rank ``share`` percentile (0..1) of ``values`` (0 when empty)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


def spread(values: list[float]) -> dict[str, float]:
    """Median, p99 and mean of ``values``, in milliseconds (values in seconds)."""
    return {
        "p50_ms": round(percentile(values, 0.5) * 1000, 1),
        "p99_ms": round(percentile(values, 0.99) * 1000, 1),
        "mean_ms": round(statistics.fmean(values) * 1000, 1) if values else 0.0,
    }


def accounted(scope: str) -> dict[str, Any]:
    """Every destination copy of the run's products (scope ``scope``): AVAILABLE, FAILED with its reason,
    or neither (stuck), and copies made twice."""
    from django.db.models import Count, F

    from replicas.models import ProductFile, Replica

    copies = Replica.objects.filter(product__scope=scope).exclude(endpoint_id=F("product__source_id"))
    states = dict(copies.values_list("state").annotate(n=Count("id")).values_list("state", "n"))
    failed_without_reason = copies.filter(state="failed", reason="").count()
    files = dict(
        ProductFile.objects.filter(product__scope=scope)
        .values_list("product_id")
        .annotate(n=Count("id"))
        .values_list("product_id", "n")
    )
    available_files = sum(
        files[p] for p in copies.filter(state="available").values_list("product_id", flat=True)
    )
    twice = (
        copies.filter(state="available")
        .values("product_id", "endpoint_id")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
        .count()
    )
    return {
        "destination_replicas": sum(states.values()),
        "states": states,
        "files_available": available_files,
        "failed_without_reason": failed_without_reason,
        "available_twice": twice,
    }


def timeline(scope: str, started: dt.datetime) -> dict[str, Any]:
    """The rate (files made AVAILABLE per second), latency and stages of the run's copies."""
    from replicas.models import CopyRequest
    from transfers.models import TransferAttempt, TransferFile

    requests = list(
        CopyRequest.objects.filter(product__scope=scope, state="FINISHED", settled__isnull=False)
        .values_list("job_id", "submitted", "settled", "product__created")
        .order_by("settled")
    )
    if not requests:
        return {"files_finished": 0}
    by_job = {job_id: (submitted, settled, created) for job_id, submitted, settled, created in requests}
    files = TransferFile.objects.filter(job__job_id__in=list(by_job), state="FINISHED")
    rows = list(files.values_list("id", "job__job_id", "job__created"))
    claims: dict[int, tuple[dt.datetime, dt.datetime]] = {}
    for file_id, claimed, finished in TransferAttempt.objects.filter(
        file_id__in=[r[0] for r in rows]
    ).values_list("file_id", "claimed", "finished"):
        if claimed is None or finished is None:
            continue
        first, last = claims.get(file_id, (claimed, finished))
        claims[file_id] = (min(first, claimed), max(last, finished))
    stages: dict[str, list[float]] = {"wait_for_plan": [], "queued": [], "copying": [], "settling": []}
    latency, settled_at = [], []
    for file_id, job_id, job_created in rows:
        submitted, settled, created = by_job[str(job_id)]
        if file_id not in claims:
            continue
        claimed, finished = claims[file_id]
        stages["wait_for_plan"].append((submitted - created).total_seconds())
        stages["queued"].append((claimed - job_created).total_seconds())
        stages["copying"].append((finished - claimed).total_seconds())
        stages["settling"].append((settled - finished).total_seconds())
        latency.append((settled - created).total_seconds())
        settled_at.append((settled - started).total_seconds())
    retried = sum(
        1
        for n in TransferFile.objects.filter(id__in=list(claims)).values_list("attempts", flat=True)
        if n > 1
    )
    attempts = TransferAttempt.objects.filter(file_id__in=list(claims))
    return {
        "files_finished": len(latency),
        "retried_files": retried,
        # Every attempt, and the task messages that ran them (a copy session's attempts share one).
        "attempts": attempts.count(),
        "copy_messages": attempts.values("task_id").distinct().count(),
        **rate_and_latency(latency, settled_at, stages),
    }


def rate_and_latency(
    latency: list[float], settled_at: list[float], stages: dict[str, list[float]]
) -> dict[str, Any]:
    """A run's rate from when each file was made AVAILABLE (``settled_at``, seconds from the start), its
    registration-to-AVAILABLE ``latency`` and its ``stages``' spreads (seconds each)."""
    window = max(settled_at, default=0.0)
    return {
        "seconds_to_last": round(window, 2),
        "files_per_second": round(len(latency) / window, 1) if window > 0 else 0.0,
        "best_10s_files_per_second": _best_window(settled_at, 10.0),
        # Whether the rate is sustained: files made AVAILABLE per second in each whole minute of the run.
        "files_per_second_by_minute": _per_window(settled_at, 60.0),
        "registration_to_available": spread(latency),
        "stages": {name: spread(values) for name, values in stages.items()},
    }


def _per_window(times: list[float], width: float) -> list[float]:
    """Files settled per second in each whole ``width`` seconds from the start (a last part is left out)."""
    whole = int(max(times, default=0.0) // width)
    counts = [0] * whole
    for t in times:
        if (index := int(t // width)) < whole:
            counts[index] += 1
    return [round(n / width, 1) for n in counts]


def _best_window(times: list[float], width: float) -> float:
    """The most files settled within any ``width`` seconds, per second."""
    ordered, best, left = sorted(times), 0, 0
    for right, t in enumerate(ordered):
        while t - ordered[left] > width:
            left += 1
        best = max(best, right - left + 1)
    return round(best / width, 1)


def worker_time(log: Path, files: int) -> dict[str, Any]:
    """The worker processes' seconds by task, from the worker's log: how many of each task ran, their mean,
    and their milliseconds per file made AVAILABLE (where a file's share of the worker went)."""
    count: dict[str, int] = defaultdict(int)
    seconds: dict[str, float] = defaultdict(float)
    for match in _TASK_LINE.finditer(log.read_text(errors="replace")):
        count[match.group(1)] += 1
        seconds[match.group(1)] += float(match.group(2))
    return {
        name: {
            "tasks": count[name],
            "mean_ms": round(seconds[name] / count[name] * 1000, 1),
            "ms_per_file": round(seconds[name] / files * 1000, 1) if files else None,
        }
        for name in sorted(count, key=lambda n: -seconds[n])
    }
