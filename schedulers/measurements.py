"""What each push job delivered on its lane, recorded as the history the tuning model is corrected by.

Jobs of the embedded service report through the ``job_finished`` signal (``schedulers.signals``); jobs of
an external FTS3 through the poll (``schedulers.external``). Both come here with the job's files, so a lane
measurement means the same whoever moved the bytes, and recording the same job twice records it once."""

from __future__ import annotations

import datetime as dt
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .models import PathMeasurement


@dataclass(frozen=True)
class FileSpan:
    """One file of a job as the transfer service reports it."""

    finished: bool
    bytes: int
    start: dt.datetime | None
    end: dt.datetime | None
    # The copy's own duration, when the service reports one (FTS3's ``tx_duration``): FTS3 times are whole
    # seconds, so a short copy's start and end can be the same second.
    duration: float | None = None


def record_lane_measurement(
    *, job_id: str, metadata: Mapping[str, Any], files: Sequence[FileSpan], succeeded: bool
) -> PathMeasurement | None:
    """One measurement for a push job: the finished files' bytes over the span from the first start to
    the last end (at least the longest file's own duration), with the streams and files the plan gave
    the lane. Nothing for a job that is not a lane's (no ``lane`` in its metadata), a relay (its two hops
    are not one lane's throughput), a job with no finished file, or a job already recorded."""
    lane = metadata.get("lane")
    if not lane or metadata.get("multihop"):
        return None
    done = [f for f in files if f.finished]
    starts = [f.start for f in done if f.start]
    ends = [f.end for f in done if f.end]
    if not done or not starts or not ends:
        return None
    if PathMeasurement.objects.filter(job_id=job_id).exists():
        return None
    longest = max((f.duration or 0.0) for f in done)
    dead = copy_dead_seconds(done, metadata)
    seconds = max((max(ends) - min(starts)).total_seconds(), longest, 1e-3)
    total = sum(f.bytes for f in done)
    return PathMeasurement.objects.create(
        source=lane[0],
        destination=lane[1],
        streams=int(metadata.get("streams") or 1),
        files=int(metadata.get("files") or 1),
        bytes=total,
        seconds=seconds,
        throughput_bps=total * 8 / seconds,
        copy_dead_s=dead,
        succeeded=succeeded,
        job_id=job_id,
    )


def copy_dead_seconds(files: Sequence[FileSpan], metadata: Mapping[str, Any]) -> float | None:
    """How much longer the job's copies took than their bytes at their share of the lane's planned rate
    (the rate over the lane's copies in flight): the mean over its finished files, each at least 0.

    That excess is what each copy costs before and besides carrying its share (the service's admission,
    the round trips before the first byte, slow start, and what TCP loses to the queue). None when the job
    does not say its planned rate or a file's time is not known."""
    planned = float(metadata.get("planned_bps") or 0.0)
    copies = max(1, int(metadata.get("lane_files") or 1))
    if planned <= 0:
        return None
    share = planned / copies
    excess = []
    for f in files:
        if f.duration is not None:
            took = f.duration
        elif f.start and f.end:
            took = (f.end - f.start).total_seconds()
        else:
            continue
        excess.append(max(0.0, took - f.bytes * 8 / share))
    return statistics.fmean(excess) if excess else None
