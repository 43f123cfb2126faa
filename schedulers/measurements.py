"""What each push job delivered on its lane, recorded as the history the tuning model is corrected by.

Jobs of the embedded service report through the ``job_finished`` signal (``schedulers.signals``); jobs of
an external FTS3 through the poll (``schedulers.external``). Both come here with the job's files, so a lane
measurement means the same whoever moved the bytes, and recording the same job twice records it once."""

from __future__ import annotations

import datetime as dt
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from transfers.choices import FileState
from transfertools.interface import FileSpan

from .models import PathMeasurement
from .planning.types import Measurement

if TYPE_CHECKING:
    from .arrivals import CopyInFlight


def record_lane_measurement(
    *, job_id: str, metadata: Mapping[str, Any], files: Sequence[FileSpan], succeeded: bool
) -> PathMeasurement | None:
    """One measurement for a push job: the finished files' bytes over the span from the first start to
    the last end (at least the longest file's own duration), with the streams and files the plan gave
    the lane. Nothing for a job that is not a lane's (no ``lane`` in its metadata), a relay (its two hops
    are not one lane's throughput), a job with no finished file, or a job already recorded. A job's
    metadata is what its submitter wrote (any client of the FTS3 endpoint may write some): a lane that is
    not two site names or counts that are not small positive integers make no measurement, never an error."""
    lane = _lane(metadata.get("lane"))
    streams, files_at_once = _count(metadata, "streams"), _count(metadata, "files")
    if lane is None or metadata.get("multihop") or streams is None or files_at_once is None:
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
    share = planned_share_bps(metadata)
    seconds = max((max(ends) - min(starts)).total_seconds(), longest, 1e-3)
    total = sum(f.bytes for f in done)
    return PathMeasurement.objects.create(
        source=lane[0],
        destination=lane[1],
        streams=streams,
        files=files_at_once,
        bytes=total,
        seconds=seconds,
        throughput_bps=total * 8 / seconds,
        copy_dead_s=dead,
        # The rate the plan gave the job: its copies' share of the lane's planned rate, times its copies.
        planned_bps=share * files_at_once if share is not None else None,
        succeeded=succeeded,
        job_id=job_id,
    )


def copy_dead_seconds(files: Sequence[FileSpan], metadata: Mapping[str, Any]) -> float | None:
    """How much longer the job's copies took than their bytes at their share of the lane's planned rate
    (the rate over the lane's copies in flight): the mean over its finished files, each at least 0.

    That excess is what each copy costs before and besides carrying its share (the service's admission,
    the round trips before the first byte, slow start, and what TCP loses to the queue). None when the job
    does not say its planned rate or a file's time is not known."""
    share = planned_share_bps(metadata)
    if share is None:
        return None
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


def planned_share_bps(metadata: Mapping[str, Any]) -> float | None:
    """One copy's share of the lane's planned rate (``planned_bps`` over the lane's copies in flight,
    ``lane_files``), as the push loop wrote them; None when the job does not say or says nonsense."""
    planned = metadata.get("planned_bps")
    copies = _count(metadata, "lane_files")
    if isinstance(planned, bool) or not isinstance(planned, int | float) or copies is None:
        return None
    if not math.isfinite(planned) or planned <= 0:
        return None
    return planned / copies


def running_transfers(copies: Iterable[CopyInFlight], now: dt.datetime) -> tuple[Measurement, ...]:
    """What the copies still in flight have carried, file by file, for the load on the links they cross
    (LiveState.running, ``contention.mark_link_limited``), over spans in epoch seconds (the clock of the
    lane measurements): a finished file its bytes from its start to its end; an active one, from its start
    to ``now``, at the rate its progress last showed (the bytes seen at its destination over the time
    since it started; the service looks every few seconds, and a job that has just ended overlapped the
    last of them). A job is measured only when it ends, and a copy that has just ended overlapped mostly
    copies still running. Files whose service reports no such times add nothing, nor does a copy whose
    files have all finished: its job is over, and measured as it ended."""
    out = []
    for copy in copies:
        if all(f.state == FileState.FINISHED for f in copy.files):
            continue
        for f in copy.files:
            finished = f.state == FileState.FINISHED
            seen, carried = (f.finished, f.size) if finished else (f.progress_at, f.transferred)
            if f.started is None or seen is None or carried <= 0 or seen <= f.started:
                continue
            end = seen if finished else max(seen, now)
            out.append(
                Measurement(
                    source=copy.lane[0],
                    destination=copy.lane[1],
                    streams=1,
                    throughput_bps=carried * 8 / (seen - f.started).total_seconds(),
                    start_s=f.started.timestamp(),
                    end_s=end.timestamp(),
                )
            )
    return tuple(out)


MAX_COUNT = 32767  # PathMeasurement's small integer fields


def _lane(value: Any) -> tuple[str, str] | None:
    """``[source site, destination site]`` as the push loop writes it, or None."""
    if not isinstance(value, list | tuple) or len(value) != 2:
        return None
    if not all(isinstance(name, str) and 0 < len(name) <= 64 for name in value):
        return None
    return value[0], value[1]


def _count(metadata: Mapping[str, Any], key: str) -> int | None:
    """A count the push loop wrote (1 when absent), or None when it is not a small positive integer."""
    value = metadata.get(key, 1)
    if value is None:
        return 1
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_COUNT:
        return None
    return value
