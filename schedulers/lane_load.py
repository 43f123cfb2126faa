"""How many products each lane carries now, and how many it may carry at once.

A lane (source site, destination site) carries up to ``SRCNET_LANE_DEPTH`` products (default 2): the next
product's files wait at the transfer service behind the current one's, so each of the lane's file slots
(the plan's concurrent files, its ``/config/links`` limit) is taken again the moment a copy ends, instead of
the lane idling from the end of one product until a cycle submits the next (measured: docs/benchmarks.md,
"Simulator against reality"). A copy waiting for its upstream replica holds no lane, nor does a pinned first
copy still queued; a relayed copy holds both its hops."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from django.conf import settings

from replicas.choices import ProductState, ReplicaState
from replicas.models import Replica
from topology.choices import StorageRole

Lane = tuple[str, str]


@dataclass
class LaneLoad:
    """Products in flight per lane against the lane depth; the cycle takes room as it submits."""

    depth: int
    counts: Counter[Lane] = field(default_factory=Counter)

    def is_full(self, lane: Lane) -> bool:
        return self.counts[lane] >= self.depth

    def take(self, lane: Lane) -> None:
        self.counts[lane] += 1

    def full(self) -> set[Lane]:
        return {lane for lane, n in self.counts.items() if n >= self.depth}

    def room(self) -> dict[Lane, int]:
        """Room on each lane that carries something (a lane not in it has ``depth``)."""
        return {lane: max(0, self.depth - n) for lane, n in self.counts.items()}


def lane_depth() -> int:
    return max(1, int(getattr(settings, "SRCNET_LANE_DEPTH", 2)))


def lane_load() -> LaneLoad:
    """The products in flight on each lane now."""
    load = LaneLoad(depth=lane_depth())
    rows = (
        Replica.objects.filter(state__in=(ReplicaState.PLANNED, ReplicaState.COPYING))
        .exclude(endpoint__role=StorageRole.SDP)
        .exclude(product__state=ProductState.REGISTERED)  # a pinned first copy still in the queue
        .values_list(
            "state",
            "product__telescope__name",
            "endpoint__site__name",
            "upstream__endpoint__site__name",
            "via__name",
        )
    )
    for state, telescope, site, upstream, via in rows:
        if upstream is not None:
            if state == ReplicaState.COPYING:
                load.take((upstream, site))
        elif via is not None:
            load.take((telescope, via))
            load.take((via, site))
        else:
            load.take((telescope, site))
    return load
