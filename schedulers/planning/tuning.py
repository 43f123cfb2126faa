"""Streams and concurrent files for a planned rate: window/RTT physics corrected by measurements (pure).

Model (docs/scheduler.md):
  ceiling  = min(window / RTT, 1.22 * MSS / (RTT * sqrt(loss)))         # per TCP stream, bit/s
  k        = median over the path's last stream-limited measurements of achieved / (streams * ceiling),
             in [0.0001, 1]; a transfer that kept up with its pace (>= 85 %), or ran on a full link
             (contention.py), only bounds k from below
  streams  = ceil(rate / (k * ceiling)),                        1 <= streams <= max_streams
  per file = max_streams_per_file, and no more than the file's blocks where the destination pulls in blocks
             (HTTP-TPC: one stream per 16 MiB block in flight)
  files    = max(ceil(rate / per_file_bps), ceil(streams / per file)), <= max_files, <= files
  copies   = the lane's copies in flight: the fewest that keep it busy despite each copy's dead time
             (copies_at_once), at least ``files`` and ``ceil(streams / per file)``, <= max_files; the
             lane's streams are then at most copies x per file, what its copies can run
  dead     = max(the model's cold start (copy_dead_time_s), the mean over the lane's last measurements
             of what its copies took beyond their bytes at their share)
With no measurement k = 1 and the dead time is the model's: the plan trusts physics until the path says
otherwise."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from topology.physics import tcp_ceiling_bps
from topology.tpc_streams import block_limited

from .types import Measurement, PlanConfig

HISTORY = 20  # measurements per path that count: recent enough to follow a path that changes
# A lane's copy dead time follows its share, which changes as soon as another lane into the same access link
# drains (on the 223 ms lane, from none to 8-11 s at p90 within one 150 s campaign): its last few jobs
# describe the lane as it is now.
DEAD_HISTORY = 5
# The floor of k: a path may deliver a ten-thousandth of what physics says (a host whose TCP buffers are far
# below the topology's window, a long path's slow start on every copy: the long-haul local network's 223 ms
# lane delivered 40 Mbit/s per stream against a 38 Gbit/s window ceiling). A floor of 0.01 kept such a lane
# at one stream however its transfers fell short (bench_reality, 2026-11-25).
MIN_CORRECTION = 1e-4
# A transfer that delivered this fraction of its pace kept up with it (slow start and the last partial
# round trip cost the rest): its streams were not the limit.
KEPT_PACE = 0.85


def lane_history(measurements: Sequence[Measurement], source: str, destination: str) -> list[Measurement]:
    """The lane's last HISTORY measurements of transfers that ran streams, oldest first."""
    return [m for m in measurements if m.source == source and m.destination == destination and m.streams > 0][
        -HISTORY:
    ]


# A lane's streams per copy stay above one only while its copies show that it pays, as FTS3's optimizer
# keeps a step only if the throughput rose. On a link its lanes fill, a stream adds no capacity, only its
# own start; by HTTP-TPC each is a cold connection of its own for its 16 MiB blocks: the 223 ms davs:// lane
# of the long-haul local network ran 26-40 Mbit/s per job with 2 streams per file against 45-46 with one
# (docs/benchmarks.md, "How the link is shared under BBR"). Judged on this many measurements of each count.
PER_COPY_EVIDENCE = 3


def streams_per_copy_cap(measurements: Sequence[Measurement], source: str, destination: str) -> int | None:
    """The most streams per copy worth asking of this lane: where its recent measurements (HISTORY) ran
    at several counts of streams per copy (``streams / files``), at least PER_COPY_EVIDENCE each, and a
    count above the best one (the highest median throughput per copy) did no better, that best count; None
    while nothing says more streams did not pay (the plan's physics and ``correction`` decide)."""
    recent = lane_history(measurements, source, destination)
    per_copy: dict[int, list[float]] = {}
    for m in recent:
        files = max(1, m.files)
        per_copy.setdefault(max(1, round(m.streams / files)), []).append(m.throughput_bps / files)
    judged = {count: statistics.median(v) for count, v in per_copy.items() if len(v) >= PER_COPY_EVIDENCE}
    if len(judged) < 2:
        return None
    best = max(judged, key=lambda count: (judged[count], -count))
    return best if any(count > best for count in judged) else None


def stream_ceiling_bps(window_bytes: float, rtt_ms: float, loss_rate: float, mss_bytes: int) -> float:
    """The most one stream carries: the window limit, or the Mathis loss limit when the path loses."""
    ceiling = tcp_ceiling_bps(window_bytes, rtt_ms)
    if loss_rate > 0:
        ceiling = min(ceiling, 1.22 * mss_bytes * 8 / ((rtt_ms / 1000.0) * math.sqrt(loss_rate)))
    return ceiling


def correction(
    measurements: Sequence[Measurement], source: str, destination: str, ceiling_bps: float
) -> float:
    """How much of the modelled per-stream ceiling this path actually delivers (1 when unmeasured).

    Each measurement says what its streams delivered against what physics says they could carry,
    ``achieved / (streams * ceiling)``. That is the path's per-stream efficiency only when the transfer
    fell short of its pace (stream-limited); a transfer that kept up with its pace, or that ran while a
    link of its path was full (``link_limited``: its share was the limit), shows only that the efficiency
    is at least that much (a lower bound). k is the median of the stream-limited ratios, never below the
    best lower bound, and 1 while no recent transfer fell short."""
    recent = lane_history(measurements, source, destination)
    short: list[float] = []
    at_least = MIN_CORRECTION
    for m in recent:
        ratio = m.throughput_bps / (m.streams * ceiling_bps)
        if m.link_limited or (m.paced_bps and m.throughput_bps >= KEPT_PACE * m.paced_bps):
            at_least = max(at_least, ratio)
        else:
            short.append(ratio)
    if not short:
        return 1.0
    return min(1.0, max(at_least, statistics.median(short)))


def effective_stream_bps(
    measurements: Sequence[Measurement],
    source: str,
    destination: str,
    *,
    window_bytes: float,
    rtt_ms: float,
    loss_rate: float,
    config: PlanConfig,
) -> float:
    ceiling = stream_ceiling_bps(window_bytes, rtt_ms, loss_rate, config.mss_bytes)
    return ceiling * correction(measurements, source, destination, ceiling)


def streams_per_copy(file_bytes: float, block_bytes: float, config: PlanConfig) -> int:
    """The most streams one copy of a ``file_bytes`` file runs: ``max_streams_per_file``, and where the
    destination pulls in blocks of ``block_bytes`` (HTTP-TPC), one per block. Asking a 32 MiB davs:// copy
    for 5 streams runs 2: the plan would count streams that never reach the wire, and measure each as a
    third of what it carried (docs/scheduler.md, "What runs on the wire")."""
    return block_limited(config.max_streams_per_file, file_bytes, block_bytes)


def streams_and_files(
    rate_bps: float, stream_bps: float, product_files: int, config: PlanConfig, per_copy: int | None = None
) -> tuple[int, int]:
    """(streams, concurrent files) that carry ``rate_bps`` when one stream carries ``stream_bps``;
    ``per_copy``: the most streams one file's copy runs (``streams_per_copy``; max_streams_per_file)."""
    per_copy = per_copy or config.max_streams_per_file
    streams = min(config.max_streams, max(1, math.ceil(rate_bps / stream_bps - 1e-9)))
    files = max(math.ceil(rate_bps / config.per_file_bps - 1e-9), math.ceil(streams / per_copy))
    return streams, max(1, min(files, config.max_files, product_files))


def measured_dead_time_s(measurements: Sequence[Measurement], source: str, destination: str) -> float | None:
    """The lane's measured copy dead time: the mean over its last DEAD_HISTORY measurements that carry one
    (None while none does). The mean, not the median: the share of its time a copy slot spends dead is
    E[dead] / (E[dead] + E[busy]) over its copies one after the other (renewal-reward), and a long lane's
    dead times are skewed (p50 3.3 s, p90 8.1 s on the 223 ms lane). What it holds beyond the model is what
    the model does not know: on the long-haul local network a 223 ms copy's flows leave slow start early
    (CUBIC's HyStart) and lose to the queue, so its copies idle the lane far longer than handshakes and slow
    start say (docs/benchmarks.md, "Copy dead time measured"). A copy that ran while a link of its path was
    full (``link_limited``) is left out: it took longer by the share it did not get, which more copies on
    the lane cannot win back on a full link (under BBR the other path's copies hold it: docs/benchmarks.md,
    "Copies waiting for a worker process"), as ``correction`` leaves it out of the streams' efficiency.
    Only the lane's last HISTORY measurements are read, those ``contention.mark_link_limited`` judges: an
    older one was never judged, and on a link full for longer than HISTORY jobs it would come back as
    the only one not marked (on the 600 s long-haul runs the 7.5 ms lane's copies then rose from 2-3 to
    4-7 at once on a link full throughout: docs/benchmarks.md, "Dead time from copies never judged")."""
    recent = [
        m.copy_dead_s
        for m in lane_history(measurements, source, destination)
        if m.copy_dead_s is not None and not m.link_limited
    ][-DEAD_HISTORY:]
    return statistics.fmean(recent) if recent else None


def copy_dead_time_s(file_bytes: float, rtt_ms: float, share_bps: float, config: PlanConfig) -> float:
    """The time one cold copy costs beyond its bytes at ``share_bps``: the fixed overhead, the round trips
    before its first byte, and slow start (the window doubles each round trip from the initial window up
    to the share's delay-bandwidth product; what it sends meanwhile is not lost)."""
    rtt = rtt_ms / 1000.0
    bdp = share_bps * rtt / 8
    rounds = max(0, math.ceil(math.log2(max(1.0, bdp / config.initial_window_bytes))))
    sent_in_slow_start = min(file_bytes, config.initial_window_bytes * (2**rounds - 1))
    slow_start_lost = max(0.0, rounds * rtt - sent_in_slow_start * 8 / share_bps)
    return config.copy_overhead_s + config.copy_setup_rtts * rtt + slow_start_lost


def lane_utilisation(
    copies: int,
    file_bytes: float,
    rtt_ms: float,
    rate_bps: float,
    config: PlanConfig,
    measured_dead_s: float | None = None,
) -> float:
    """The share of time a lane that always has ``copies`` copies in flight carries its rate.

    On a full lane each copy gets rate/copies, so its bytes take ``copies * file_bytes * 8 / rate``; a copy
    spends the dead time (``copy_dead_time_s``) before that. The lane idles only while every copy is in its
    dead time: with copies at independent phases, (dead / (dead + bytes time)) ** copies of the time. A
    measured dead time replaces the model's where it is longer (the model is the floor: no copy skips its
    handshakes)."""
    share = rate_bps / copies
    dead = max(copy_dead_time_s(file_bytes, rtt_ms, share, config), measured_dead_s or 0.0)
    busy = copies * file_bytes * 8 / rate_bps
    return 1.0 - (dead / (dead + busy)) ** copies


def copies_at_once(
    file_bytes: float,
    rtt_ms: float,
    rate_bps: float,
    config: PlanConfig,
    measured_dead_s: float | None = None,
) -> int:
    """The fewest copies in flight that keep a lane at ``target_utilisation`` (at most ``max_files``).

    A long path with small files needs several: at 223 ms a 32 MiB copy on a 100 Mbit/s lane spends about
    as long starting (handshakes, the GET, slow start) as it does sending, so one copy at a time leaves the
    lane idle half the time (measured: docs/benchmarks.md, "Simulator against reality")."""
    if file_bytes <= 0 or rate_bps <= 0:
        return 1
    for copies in range(1, config.max_files + 1):
        utilisation = lane_utilisation(copies, file_bytes, rtt_ms, rate_bps, config, measured_dead_s)
        if utilisation >= config.target_utilisation:
            return copies
    return config.max_files
