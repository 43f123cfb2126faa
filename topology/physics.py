"""TCP and path physics (pure: no Django). Figures from the AENEAS measurements in docs/facts.

The per-flow ceiling of a TCP connection is its window divided by the round trip: 1 GiB over 303 ms is
28.3 Gbit/s, so a 100 Gbit/s push over that path needs at least four streams.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

# Slow start ends after about ten round trips (AENEAS, 303 ms path: ~15 s to the 28.3 Gbit/s plateau).
SLOW_START_RTTS = 10


def bandwidth_delay_product_bytes(rate_bps: float, rtt_ms: float) -> float:
    """Bytes in flight needed to fill a path: 100 Gbit/s x 303 ms = 3.79 GB."""
    _require_positive(rate_bps=rate_bps, rtt_ms=rtt_ms)
    return rate_bps * (rtt_ms / 1000.0) / 8.0


def tcp_ceiling_bps(window_bytes: float, rtt_ms: float) -> float:
    """The most one TCP flow can carry with a ``window_bytes`` window over ``rtt_ms``."""
    _require_positive(window_bytes=window_bytes, rtt_ms=rtt_ms)
    return window_bytes * 8.0 / (rtt_ms / 1000.0)


def streams_needed(
    target_bps: float, *, window_bytes: float, rtt_ms: float, bottleneck_bps: float | None = None
) -> int:
    """TCP streams needed to carry ``target_bps`` (capped at the bottleneck): ceil(target / ceiling)."""
    _require_positive(target_bps=target_bps)
    rate = min(target_bps, bottleneck_bps) if bottleneck_bps else target_bps
    return max(1, math.ceil(rate / tcp_ceiling_bps(window_bytes, rtt_ms) - 1e-9))


def slow_start_seconds(rtt_ms: float) -> float:
    """Rough time for one flow to reach its plateau: about ten round trips."""
    _require_positive(rtt_ms=rtt_ms)
    return SLOW_START_RTTS * rtt_ms / 1000.0


@dataclass(frozen=True)
class PathMetrics:
    capacity_bps: int
    rtt_ms: float
    loss_rate: float
    opex_eur_per_year: float


def path_metrics(links: Iterable[tuple[int, float, float, float]]) -> PathMetrics:
    """Capacity is the bottleneck, RTT and cost add up, delivery probabilities multiply.

    Each link is (capacity_bps, rtt_ms, loss_rate, opex_eur_per_year)."""
    capacity: int | None = None
    rtt = 0.0
    delivered = 1.0
    opex = 0.0
    for link_capacity, link_rtt, link_loss, link_opex in links:
        capacity = link_capacity if capacity is None else min(capacity, link_capacity)
        rtt += link_rtt
        delivered *= 1.0 - link_loss
        opex += link_opex
    return PathMetrics(
        capacity_bps=capacity or 0,
        rtt_ms=round(rtt, 6),
        loss_rate=round(1.0 - delivered, 12),
        opex_eur_per_year=opex,
    )


def _require_positive(**values: float) -> None:
    for name, value in values.items():
        if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a positive number, got {value!r}")
