"""How many products each lane carries now, and how many it may carry at once.

A lane (source site, destination site) carries up to ``SRCNET_LANE_DEPTH`` products (default 2): the next
product's files wait at the transfer service behind the current one's, so each of the lane's file slots
(the plan's concurrent files, its ``/config/links`` limit) is taken again the moment a copy ends, instead of
the lane idling from the end of one product until a cycle submits the next (measured: docs/benchmarks.md,
"Simulator against reality"). A copy waiting for its upstream replica holds no lane, nor does a pinned first
copy still queued; a relayed copy holds both its hops."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from django.conf import settings
from django.db.models import Count, Sum

from replicas.choices import ProductState, ReplicaState
from replicas.models import Replica
from topology.choices import StorageRole

from .planning.types import Measurement

Lane = tuple[str, str]


@dataclass
class LaneLoad:
    """Products in flight per lane against the lane's depth; the cycle takes room as it submits.

    ``depth`` is ``SRCNET_LANE_DEPTH``, for a lane whose copies in flight one product's files fill; a lane
    the plan gives more copies than a product has files (a long path with small files) is deepened so that
    enough products wait at the transfer service to fill them (``deepen``)."""

    depth: int
    counts: Counter[Lane] = field(default_factory=Counter)
    depths: dict[Lane, int] = field(default_factory=dict)
    # Bytes still to copy on each lane's first copies in flight (arrivals.lane_backlog_bytes): the plan
    # gives a lane that is behind more of its telescope's link (planning.backlog).
    bytes_left: dict[Lane, float] = field(default_factory=dict)
    # The mean file size of each lane's first copies in flight (going straight to their SRC): what the plan
    # sizes the lane's copies for when it has no new leg on it (Plan.lane_copies).
    file_bytes: dict[Lane, float] = field(default_factory=dict)
    # What the copies in flight have carried so far, with their spans (measurements.running_transfers):
    # the plan judges by it whether a measured copy's link was full (LiveState.running).
    running: tuple[Measurement, ...] = ()

    def depth_of(self, lane: Lane) -> int:
        return self.depths.get(lane, self.depth)

    def deepen(self, lane: Lane, *, copies: int, files_per_product: int) -> None:
        """Let ``lane`` carry enough products for ``copies`` copies in flight, each product bringing
        ``files_per_product``, plus the depth's products waiting behind them."""
        needed = math.ceil(copies / max(1, files_per_product)) + self.depth - 1
        self.depths[lane] = max(self.depth_of(lane), needed)

    def is_full(self, lane: Lane) -> bool:
        return self.counts[lane] >= self.depth_of(lane)

    def take(self, lane: Lane) -> None:
        self.counts[lane] += 1

    def full(self) -> set[Lane]:
        return {lane for lane in self.counts if self.is_full(lane)}

    def room(self) -> dict[Lane, int]:
        """Room on each lane that carries something or was deepened (a lane not in it has ``depth``)."""
        return {
            lane: max(0, self.depth_of(lane) - self.counts[lane]) for lane in {*self.counts, *self.depths}
        }


def lane_depth() -> int:
    return max(1, int(getattr(settings, "SRCNET_LANE_DEPTH", 2)))


def lane_load(
    bytes_left: Mapping[Lane, float] | None = None, running: tuple[Measurement, ...] = ()
) -> LaneLoad:
    """The products in flight on each lane now, with ``bytes_left`` to copy on each and what their copies
    have carried so far (``running``)."""
    load = LaneLoad(depth=lane_depth(), bytes_left=dict(bytes_left or {}), running=running)
    rows = (
        Replica.objects.filter(state__in=(ReplicaState.PLANNED, ReplicaState.COPYING))
        .exclude(endpoint__role=StorageRole.SDP)
        .exclude(product__state=ProductState.REGISTERED)  # a pinned first copy still in the queue
        .values_list(
            "pk",
            "state",
            "product__telescope__name",
            "endpoint__site__name",
            "upstream__endpoint__site__name",
            "via__name",
        )
        .annotate(size=Sum("product__files__size_bytes"), files=Count("product__files"))
    )
    sizes: dict[Lane, list[float]] = {}
    for _, state, telescope, site, upstream, via, size, files in rows:
        if upstream is not None:
            if state == ReplicaState.COPYING:
                load.take((upstream, site))
        elif via is not None:
            load.take((telescope, via))
            load.take((via, site))
        else:
            load.take((telescope, site))
            if state == ReplicaState.COPYING and files:
                sizes.setdefault((telescope, site), [0.0, 0.0])
                sizes[(telescope, site)][0] += float(size or 0)
                sizes[(telescope, site)][1] += files
    load.file_bytes = {lane: total / files for lane, (total, files) in sizes.items()}
    return load
