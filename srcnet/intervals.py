"""Intervals of time (pure): how many were open at once."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


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
