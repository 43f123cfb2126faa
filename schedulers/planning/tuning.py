"""Streams and concurrent files for a planned rate: window/RTT physics corrected by measurements (pure).

Model (docs/scheduler.md):
  ceiling  = min(window / RTT, 1.22 * MSS / (RTT * sqrt(loss)))         # per TCP stream, bit/s
  k        = median over the path's last stream-limited measurements of achieved / (streams * ceiling),
             in [0.0001, 1]; a transfer that kept up with its pace (>= 85 %) only bounds k from below
  streams  = ceil(rate / (k * ceiling)),                        1 <= streams <= max_streams
  files    = max(ceil(rate / per_file_bps), ceil(streams / max_streams_per_file)), <= max_files, <= files
With no measurement k = 1: the plan trusts physics until the path says otherwise."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from topology.physics import tcp_ceiling_bps

from .types import Measurement, PlanConfig

HISTORY = 20  # measurements per path that count: recent enough to follow a path that changes
# The floor of k: a path may deliver a ten-thousandth of what physics says (a host whose TCP buffers are far
# below the topology's window, a long path's slow start on every copy: the long-haul local network's 223 ms
# lane delivered 40 Mbit/s per stream against a 38 Gbit/s window ceiling). A floor of 0.01 kept such a lane
# at one stream however its transfers fell short (bench_reality, 2026-11-25).
MIN_CORRECTION = 1e-4
# A transfer that delivered this fraction of its pace kept up with it (slow start and the last partial
# round trip cost the rest): its streams were not the limit.
KEPT_PACE = 0.85


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
    fell short of its pace (stream-limited); a transfer that kept up with its pace shows only that the
    efficiency is at least that much (a lower bound). k is the median of the stream-limited ratios, never
    below the best lower bound, and 1 while no recent transfer fell short."""
    recent = [
        m for m in measurements if m.source == source and m.destination == destination and m.streams > 0
    ][-HISTORY:]
    short: list[float] = []
    at_least = MIN_CORRECTION
    for m in recent:
        ratio = m.throughput_bps / (m.streams * ceiling_bps)
        if m.paced_bps and m.throughput_bps >= KEPT_PACE * m.paced_bps:
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


def streams_and_files(
    rate_bps: float, stream_bps: float, product_files: int, config: PlanConfig
) -> tuple[int, int]:
    """(streams, concurrent files) that carry ``rate_bps`` when one stream carries ``stream_bps``."""
    streams = min(config.max_streams, max(1, math.ceil(rate_bps / stream_bps - 1e-9)))
    files = max(
        math.ceil(rate_bps / config.per_file_bps - 1e-9), math.ceil(streams / config.max_streams_per_file)
    )
    return streams, max(1, min(files, config.max_files, product_files))
