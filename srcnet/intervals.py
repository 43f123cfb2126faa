"""Intervals of time (pure): how many were open at once."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def covered_seconds(spans: Iterable[tuple[float, float]]) -> float:
    """The time (start, end) intervals cover together, each instant once: how long a lane carried
    something, from the spans of its jobs (jobs in flight together count once, gaps between them not)."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(spans):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def most_at_once(spans: Iterable[tuple[Any, Any]]) -> int:
    """The most intervals (start, end) open at one instant; one ending as another starts does not overlap.
    How many copies a transfer service ran at once, from its own records of each copy's start and end."""
    spans = list(spans)
    events = sorted([(end, -1) for _, end in spans] + [(start, 1) for start, _ in spans])
    running = most = 0
    for _, step in events:
        running += step
        most = max(most, running)
    return most
