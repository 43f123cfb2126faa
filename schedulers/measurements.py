"""What each push job delivered on its lane, recorded as the history the tuning model is corrected by.

Jobs of the embedded service report through the ``job_finished`` signal (``schedulers.signals``); jobs of
an external FTS3 through the poll (``schedulers.external``). Both come here with the job's files, so a lane
measurement means the same whoever moved the bytes, and recording the same job twice records it once."""

from __future__ import annotations

import datetime as dt
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
        succeeded=succeeded,
        job_id=job_id,
    )
