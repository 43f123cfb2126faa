"""The link optimizer's decision rule (pure: no Django), after FTS3's.

Every round, per link: the throughput of the recent window is smoothed into an exponential moving average
(alpha 0.1). Too many failures (success below 97 %) take one slot away; otherwise a rising or steady EMA
adds a step (1, or 2 in normal and aggressive modes), a window an order of magnitude below the EMA takes
one away, and a link with fewer files queued than it may already run is left alone. The result stays in
[min_active, max_active]; conservative mode never goes above the queue.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

EMA_ALPHA = 0.1
LOW_SUCCESS_RATE = 97.0
BASE_SUCCESS_RATE = 96.0
CONSERVATIVE, NORMAL, AGGRESSIVE = 1, 2, 3


@dataclass(frozen=True)
class LinkWindow:
    """What the optimizer sees of one link."""

    current: int | None  # the previous decision, None on first sight
    min_active: int
    max_active: int
    mode: int
    throughput_bps: float  # bytes x 8 / window seconds, for copies that finished in the window
    success_rate: float | None  # percent of attempts that succeeded in the window, None if none ended
    previous_ema_bps: float
    queued: int
    active: int


@dataclass(frozen=True)
class Decision:
    active: int
    ema_bps: float
    rationale: str


def decide(window: LinkWindow) -> Decision:
    """The link's concurrency for the next round, with the reason."""
    low, high = window.min_active, window.max_active
    if window.current is None:
        return Decision((low + high) // 2, window.throughput_bps, "first sight: half-way between min and max")
    ema = EMA_ALPHA * window.throughput_bps + (1 - EMA_ALPHA) * window.previous_ema_bps
    current = window.current
    step = 2 if window.mode >= NORMAL else 1
    if low == high:
        return Decision(low, ema, "range fixed")
    if window.success_rate is not None and window.success_rate < LOW_SUCCESS_RATE:
        return _clamp(
            current - 1, window, ema, f"success rate {window.success_rate:.1f} % below {LOW_SUCCESS_RATE:g} %"
        )
    if ema <= 0:
        return _clamp(current, window, ema, "no throughput yet: hold")
    if window.queued < current:
        return _clamp(current, window, ema, f"queue ({window.queued}) below the current value: hold")
    previous, now = window.previous_ema_bps, window.throughput_bps
    if previous > 0 and now < previous:
        if now <= 0 or math.log10(previous) - math.log10(now) >= 1:
            return _clamp(current - 1, window, ema, "throughput fell an order of magnitude below its average")
        return _clamp(current, window, ema, "throughput falling: hold")
    return _clamp(current + step, window, ema, f"throughput steady or rising: +{step}")


def _clamp(value: int, window: LinkWindow, ema: float, rationale: str) -> Decision:
    high = window.max_active
    if window.mode == CONSERVATIVE:
        high = min(high, max(window.min_active, window.queued))
    return Decision(max(window.min_active, min(high, value)), ema, rationale)
