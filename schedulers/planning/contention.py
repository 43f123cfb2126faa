"""Which measured transfers ran on a full link (pure): their shortfall was their share, not their streams.

A lane's copies deliver less than the plan asked for either because their streams cannot carry more (a
window, loss: more streams help) or because a link of their path was full with other lanes' copies (more
streams only take from the others, and each new stream pays its own start). ``tuning.correction`` reads the
first kind only. A transfer ran on a full link when, over its span, the transfers measured on a shared
link carried at least LINK_FULL of that link's capacity: the long-haul local network's 223 ms lane read its
copies' shortfall on the shared access link as stream-limited and asked for 2 streams per file, which ran
at 26-40 Mbit/s per job against 45-46 with one (docs/benchmarks.md, "Streams per copy only while they
pay").

The load is what the measured transfers carried (bytes over their span): transfers still running are not
measured yet, so a transfer's link is judged full only on what has finished, and a later plan, which sees
more of them, can judge it again. Both the push loop and the simulator give the planner measurements with
their spans, and the planner marks them here before it reads them, so both judge alike."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import replace

from .tuning import HISTORY
from .types import Measurement, Topology

# The share of a link's capacity its transfers carried for it to count as full: payload at MTU 1500 is
# 96.5 % of the wire, and a transfer's bytes over its span spread its start's dead time over the rest.
LINK_FULL = 0.9


def mark_link_limited(measurements: Sequence[Measurement], topology: Topology) -> tuple[Measurement, ...]:
    """The measurements, each lane's last HISTORY (those the tuning model reads) marked ``link_limited``
    where a directed link of their path carried at least LINK_FULL of its capacity over their span; the
    others, and those without a span or a path in ``topology``, as they were."""
    hops: dict[tuple[str, str], tuple[str, ...]] = {}
    for m in measurements:
        key = (m.source, m.destination)
        if key not in hops:
            path = topology.path(*key)
            hops[key] = topology.directed_links(path) if path else ()
    spans = _spans_by_link(measurements, hops)
    judged = _last_per_lane(measurements)
    marked = list(measurements)
    constraints = topology.link_constraints()
    for index in judged:
        m = measurements[index]
        if m.link_limited or not _has_span(m):
            continue
        for hop in hops[(m.source, m.destination)]:
            capacity = constraints[hop][1]
            if capacity > 0 and spans[hop].load_bps(m.start_s, m.end_s) >= LINK_FULL * capacity:  # type: ignore[arg-type]
                marked[index] = replace(m, link_limited=True)
                break
    return tuple(marked)


class _LinkSpans:
    """The measured transfers over one directed link, by start: (start, end, throughput)."""

    def __init__(self) -> None:
        self.rows: list[tuple[float, float, float]] = []
        self.longest = 0.0

    def add(self, start: float, end: float, throughput_bps: float) -> None:
        self.rows.append((start, end, throughput_bps))
        self.longest = max(self.longest, end - start)

    def finish(self) -> None:
        self.rows.sort()

    def load_bps(self, start: float, end: float) -> float:
        """The mean rate the link's transfers carried over [start, end]."""
        carried = 0.0
        # Rows starting before ``end``; walking back, none starting before start - longest can overlap.
        index = bisect.bisect_left(self.rows, (end, float("-inf"), float("-inf")))
        for row_start, row_end, throughput in reversed(self.rows[:index]):
            if row_start < start - self.longest:
                break
            overlap = min(end, row_end) - max(start, row_start)
            if overlap > 0:
                carried += throughput * overlap
        return carried / (end - start)


def _has_span(m: Measurement) -> bool:
    return m.start_s is not None and m.end_s is not None and m.end_s > m.start_s


def _spans_by_link(
    measurements: Sequence[Measurement], hops: dict[tuple[str, str], tuple[str, ...]]
) -> dict[str, _LinkSpans]:
    spans: dict[str, _LinkSpans] = {}
    for m in measurements:
        for hop in hops[(m.source, m.destination)]:
            link = spans.setdefault(hop, _LinkSpans())
            if _has_span(m):
                link.add(m.start_s, m.end_s, m.throughput_bps)  # type: ignore[arg-type]
    for link in spans.values():
        link.finish()
    return spans


def _last_per_lane(measurements: Sequence[Measurement]) -> list[int]:
    """Indexes of each lane's last HISTORY measurements that ran streams (``tuning.lane_history``'s)."""
    seen: dict[tuple[str, str], int] = {}
    out = []
    for index in range(len(measurements) - 1, -1, -1):
        m = measurements[index]
        key = (m.source, m.destination)
        if m.streams > 0 and seen.get(key, 0) < HISTORY:
            seen[key] = seen.get(key, 0) + 1
            out.append(index)
    return out
