"""Each lane's work in sight, and a telescope's target split so that its lanes drain it together (pure).

The policy's shares split a telescope's target rate among its lanes. On paths of unequal length that
leaves the long lane behind: its copies are slower to start and slower per connection, and the short lane's
connections take more than their share of the access link. The long lane's queue then grows while the
short one's empties, and the push ends with the long lane alone on the access link, far from filling it
(docs/benchmarks.md, "Lanes that drain together"). With ``PlanConfig.drain_together`` the target is split
in proportion to each lane's work in sight instead: the bytes still to copy on it and the bytes of the
products the plan sends on it. Every lane then has the same time to drain; a lane that falls behind gets a
larger part of the link, hence more copies in flight, until it catches up. It is off by default: measured,
the end of a push got shorter but the link no fuller. Whatever the setting, a telescope with nothing in
sight holds no part of any link or SRC. The shares still decide where products go, so the bytes each SRC
receives do not change."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from .policies import ReplicaPolicy, normalised_shares, routes
from .types import LiveState, Product, Topology

Lane = tuple[str, str]


class _Demand(Protocol):
    source: str
    destination: str
    demand_bps: float


def lane_work(
    products: Sequence[Product],
    policy: ReplicaPolicy,
    topology: Topology,
    state: LiveState,
    relayed: Mapping[str, tuple[str, float]] | None = None,
) -> dict[Lane, float]:
    """Bytes each lane out of a telescope has to carry: what it carries outside this plan
    (``state.lane_backlog_bytes``: its copies in flight, other plans' products) and the first copies of
    ``products``. A product with no destination counts on each of its telescope's SRCs by their shares, as
    the planner will place it; ``relayed``: telescope -> (its distribution centre, the part of its
    products sent through it), for telescopes whose backpressure relays them."""
    work: dict[Lane, float] = dict(state.lane_backlog_bytes)
    relayed = relayed or {}
    shares = {t.name: normalised_shares(topology, t.name) for t in topology.telescopes}

    def add(telescope: str, site: str, size: float) -> None:
        centre, part = relayed.get(telescope, ("", 0.0))
        hops = routes(policy, topology, telescope, site)
        if hops:
            lane = hops[0].source_destination()
            work[lane] = work.get(lane, 0.0) + size * (1 - part)
        if part > 0:
            work[(telescope, centre)] = work.get((telescope, centre), 0.0) + size * part

    for product in sorted(products, key=lambda p: p.id):  # the same sums whatever the input order
        if product.destination is not None:
            add(product.telescope, product.destination, product.size_bytes)
            continue
        for site, share in shares[product.telescope].items():
            add(product.telescope, site, product.size_bytes * share)
    return work


def drain_together(
    demands: Sequence[_Demand], work: Mapping[Lane, float], telescopes: set[str], *, split: bool = True
) -> list[float]:
    """Each lane's demand (bit/s). A telescope with nothing in sight asks for nothing (it only gets what
    the others leave); with ``split``, a telescope's lanes share the sum of their policy demands in
    proportion to their work in sight, else each keeps its policy demand. With nothing in sight anywhere,
    and for lanes not out of a telescope, the policy's demands."""
    out = [d.demand_bps for d in demands]
    weight = [work.get((d.source, d.destination), 0.0) if d.source in telescopes else 0.0 for d in demands]
    if sum(weight) <= 0:
        return out
    for telescope in telescopes:
        mine = [i for i, d in enumerate(demands) if d.source == telescope]
        total = sum(demands[i].demand_bps for i in mine)
        weights = sum(weight[i] for i in mine)
        for i in mine:
            if weights <= 0:
                out[i] = 0.0
            elif split:
                out[i] = total * weight[i] / weights
    return out
