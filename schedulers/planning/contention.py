"""Which measured transfers ran on a full link (pure): their shortfall was their share, not their streams.

A lane's copies deliver less than the plan asked for either because their streams cannot carry more (a
window, loss: more streams help) or because a link of their path was full with other lanes' copies (more
streams only take from the others, and each new stream pays its own start). ``tuning.correction`` reads the
first kind only. A transfer ran on a full link when, over its span, the transfers measured on a shared
link carried at least LINK_FULL of that link's capacity: the long-haul local network's 223 ms lane read its
copies' shortfall on the shared access link as stream-limited and asked for 2 streams per file, which ran
at 26-40 Mbit/s per job against 45-46 with one (docs/benchmarks.md, "Streams per copy only while they
pay").

The load is what the measured transfers carried (bytes over their span) and what the transfers still
running have carried so far (``LiveState.running``): a transfer that has just ended overlapped mostly
copies that are still running, and judged on the finished ones only, its link looked emptier than it was
(the 223 ms lane of the 600 s campaigns tried 2 streams per file for 6 and 11 of 61 jobs; docs/benchmarks.md,
"A campaign four times as long"). A later plan, which sees more of them, can judge it again. Both the push
loop and the simulator give the planner measurements and running transfers with their spans, and the
planner marks them here before it reads them, so both judge alike."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import replace

from .tuning import HISTORY
from .types import Measurement, Topology

# The share of a link's capacity its transfers carried for it to count as full. What they carried is an
# estimate below the wire's: payload at MTU 1500 is 96.5 % of it, and each transfer's bytes are spread
# over its span, its start's dead time included. On the long-haul network's access link, busy 96 % of
# the time, the estimate over the 223 ms lane's jobs ran from 0.76 to 1.16 of capacity with hindsight
# (every copy known): 0.9 left 10-15 of its 61 jobs per 600 s run read as stream-limited, and one is
# enough for the stream model to ask 2 streams per file (docs/benchmarks.md, "The queue a full link
# holds"); 0.8 left 0-2. At 0.8 a lane that has the link to itself is judged by its streams until it
# carries 80 % of it; beyond that more streams can add little.
LINK_FULL = 0.8


def mark_link_limited(
    measurements: Sequence[Measurement], topology: Topology, running: Sequence[Measurement] = ()
) -> tuple[Measurement, ...]:
    """The measurements, each lane's last HISTORY (those the tuning model reads) marked ``link_limited``
    where a directed link of their path carried at least LINK_FULL of its capacity over their span, with
    what the ``running`` transfers carried on it so far; the others, and those without a span or a path in
    ``topology``, as they were."""
    hops: dict[tuple[str, str], tuple[str, ...]] = {}
    for m in (*measurements, *running):
        key = (m.source, m.destination)
        if key not in hops:
            path = topology.path(*key)
            hops[key] = topology.directed_links(path) if path else ()
    links = _spans_by_link((*measurements, *running), hops)
    capacity = {name: bps for name, (_, bps) in topology.link_constraints().items()}
    marked = list(measurements)
    for index in _read_by_tuning(measurements):
        m, span = measurements[index], _span(measurements[index])
        if m.link_limited or span is None:
            continue
        hops_full = (
            capacity[hop] > 0 and links[hop].load_bps(*span) >= LINK_FULL * capacity[hop]
            for hop in hops[(m.source, m.destination)]
        )
        if any(hops_full):
            marked[index] = replace(m, link_limited=True)
    return tuple(marked)


class _LinkSpans:
    """The measured transfers over one directed link: (start, end, throughput), by start."""

    def __init__(self, rows: list[tuple[float, float, float]]) -> None:
        self.rows = sorted(rows)
        self.longest = max((end - start for start, end, _ in rows), default=0.0)

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


def _span(m: Measurement) -> tuple[float, float] | None:
    if m.start_s is None or m.end_s is None or m.end_s <= m.start_s:
        return None
    return m.start_s, m.end_s


def _spans_by_link(
    measurements: Sequence[Measurement], hops: dict[tuple[str, str], tuple[str, ...]]
) -> dict[str, _LinkSpans]:
    rows: dict[str, list[tuple[float, float, float]]] = {}
    for m in measurements:
        span = _span(m)
        if span is not None:  # a measurement judged has a span, so its hops are here
            for hop in hops[(m.source, m.destination)]:
                rows.setdefault(hop, []).append((*span, m.throughput_bps))
    return {hop: _LinkSpans(found) for hop, found in rows.items()}


def _read_by_tuning(measurements: Sequence[Measurement]) -> list[int]:
    """Indexes of what ``tuning.lane_history`` reads: each lane's last HISTORY measurements that ran
    streams."""
    by_lane: dict[tuple[str, str], list[int]] = {}
    for index, m in enumerate(measurements):
        if m.streams > 0:
            by_lane.setdefault((m.source, m.destination), []).append(index)
    return [index for indexes in by_lane.values() for index in indexes[-HISTORY:]]
