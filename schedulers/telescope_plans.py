"""What a push cycle plans, telescope by telescope: the queue and the waiting second copies under each
telescope's stored policy, with the lanes' load and what they delivered (the measurement history); pinned
first copies go where pinned. The cycle itself (``schedulers.loop``) takes the room each plan fills before
asking for the next."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass, field

from django.db.models import Count, Sum

from replicas.choices import ReplicaState
from replicas.models import Replica, ReplicaPolicy
from replicas.services import active_policy
from topology.choices import StorageRole
from topology.models import Telescope

from . import arrivals
from .lane_health import unavailable_lanes, unpin_broken, with_outage_events
from .lane_load import LaneLoad, lane_load
from .measurements import running_transfers
from .models import PathMeasurement
from .planning.backlog import lane_work
from .planning.dispatch import due_legs
from .planning.lanes import lane_demands
from .planning.pinning import pinned_policy, pinned_topology
from .planning.planner import plan
from .planning.policies import ReplicaPolicy as PlannerPolicy
from .planning.types import (
    Leg,
    LegRole,
    LiveState,
    Measurement,
    Plan,
    PlanConfig,
    PlanInputError,
    Product,
    Topology,
)
from .snapshot import planner_policy, policy_topology, queued_products, topology_snapshot

MEASUREMENT_HISTORY = 200


@dataclass(frozen=True)
class WaitingCopy:
    """A second or full copy whose upstream replica is available: the next plan carries its leg."""

    replica_id: int
    telescope: str
    leg: Leg


def _placed_bytes() -> dict[str, float]:
    """Bytes each SRC has received as a product's first copy (second copies do not count to shares, as in
    the planner)."""
    rows = (
        Replica.objects.exclude(state=ReplicaState.FAILED)
        .exclude(endpoint__role=StorageRole.SDP)
        .filter(upstream__isnull=True)
        .values("endpoint__site__name")
        .annotate(total=Sum("product__files__size_bytes"))
    )
    return {r["endpoint__site__name"]: float(r["total"] or 0) for r in rows}


def _waiting_copies() -> list[WaitingCopy]:
    """Planned copies whose upstream replica has arrived, oldest first, as legs for the planner to carry.
    A copy whose upstream came by a Rucio rule is Rucio's to make (``RucioAdapter.place_waiting_copies``,
    run as rules are followed), not the loop's."""
    rows = (
        Replica.objects.filter(
            state=ReplicaState.PLANNED, upstream__state=ReplicaState.AVAILABLE, upstream__rucio_rule=""
        )
        .select_related("product__telescope", "endpoint__site", "upstream__endpoint__site")
        .annotate(total=Sum("product__files__size_bytes"), nfiles=Count("product__files", distinct=True))
        .order_by("created", "id")
    )
    out = []
    for r in rows:
        upstream = r.upstream
        assert upstream is not None
        leg = Leg(
            product_id=r.product.did,
            role=LegRole.SECOND,
            source=upstream.endpoint.site.name,
            destination=r.endpoint.site.name,
            links=(),
            streams=1,
            files=max(1, r.nfiles),
            start_s=0.0,
            start_slot=0,
            finish_s=0.0,
            rate_bps=0.0,
            priority=r.product.priority,
            size_bytes=float(r.total or 0),
        )
        out.append(WaitingCopy(r.pk, r.product.telescope.name, leg))
    return out


def _measurements() -> tuple[Measurement, ...]:
    """The newest MEASUREMENT_HISTORY lane measurements, oldest first: the tuning model takes each lane's
    last ones as its most recent (tuning.HISTORY, DEAD_HISTORY), as the simulator appends them. Each with
    the rate the plan gave it and its span (recorded as it ended), epoch seconds."""
    rows = list(PathMeasurement.objects.filter(succeeded=True)[:MEASUREMENT_HISTORY])[::-1]
    return tuple(
        Measurement(
            source=m.source,
            destination=m.destination,
            streams=m.streams,
            throughput_bps=m.throughput_bps,
            paced_bps=m.planned_bps,
            copy_dead_s=m.copy_dead_s,
            files=m.files,
            start_s=m.created.timestamp() - m.seconds,
            end_s=m.created.timestamp(),
        )
        for m in rows
    )


@dataclass
class TelescopePlan:
    """One telescope's plan in a cycle: its queue and its waiting copies under its active policy."""

    telescope: str
    policy: ReplicaPolicy
    result: Plan
    carried: list[WaitingCopy]
    due: list[int]
    unplanned: list[WaitingCopy]
    # Products whose first copy is pinned (a campaign's destination, a re-route) that the planner cannot
    # carry (a distribution centre's buffer, no path): they go outside the plan, one stream.
    unplanned_pins: list[Product] = field(default_factory=list)

    @property
    def first_carried(self) -> int:
        """Index of the first carried leg (they come last in the plan, in the order given)."""
        return len(self.result.legs) - len(self.carried)


def plan_telescope(
    telescope: str,
    products: list[Product],
    waiting: list[WaitingCopy],
    topology: Topology,
    measurements: tuple[Measurement, ...],
    load: LaneLoad,
    config: PlanConfig,
    others: list[Product] | None = None,
) -> list[TelescopePlan]:
    """Plan one telescope's products and waiting copies under its active stored policy (nothing is
    submitted): one plan for the products the policy places, and one for the products whose first copy is
    pinned to a site; raises ``PlanInputError`` if the policy does not fit the topology. ``others``: the
    products queued for the other telescopes, whose lanes share SRCs' capacity with this one's."""
    stored = active_policy(Telescope.objects.get(name=telescope), create=False)
    free = [p for p in products if p.destination is None]
    pinned = [p for p in products if p.destination is not None]
    others = others or []
    plans = []
    if free or waiting:
        weighed = policy_topology(stored, topology)
        outside = _outside(load, [*others, *pinned], topology)
        plans.append(_plan(stored, free, waiting, weighed, measurements, load, config, outside=outside))
    if pinned:
        outside = _outside(load, [*others, *free], topology)
        plans.append(_pinned_plan(stored, pinned, topology, measurements, load, config, outside))
    return plans


def _outside(load: LaneLoad, products: list[Product], topology: Topology) -> dict[tuple[str, str], float]:
    """What each lane carries outside a plan: its copies in flight and the first copies of ``products``
    (planned apart), straight to their SRCs."""
    state = LiveState(lane_backlog_bytes=load.bytes_left)
    return lane_work(products, PlannerPolicy(), topology, state)


def _plan(
    stored: ReplicaPolicy,
    products: list[Product],
    waiting: list[WaitingCopy],
    topology: Topology,
    measurements: tuple[Measurement, ...],
    load: LaneLoad,
    config: PlanConfig,
    policy: PlannerPolicy | None = None,
    *,
    outside: dict[tuple[str, str], float],
) -> TelescopePlan:
    """One plan; ``outside``: what each lane carries outside it (``_outside``)."""
    policy = policy or planner_policy(stored, topology)
    lanes = lane_demands(policy, topology, config).keys()
    carried = [c for c in waiting if (c.leg.source, c.leg.destination) in lanes]
    # A copy placed before its policy changed may have no lane in the policy now: it goes outside the plan.
    unplanned = [c for c in waiting if (c.leg.source, c.leg.destination) not in lanes]
    down = unavailable_lanes(topology=topology)
    state = LiveState(
        placed_bytes=_placed_bytes(),
        measurements=measurements,
        running=load.running,
        unavailable_lanes=down.keys(),
        lane_backlog_bytes=outside,
        lane_file_bytes=load.file_bytes,
    )
    result = plan(products, topology, policy, state, config, carry_over=[c.leg for c in carried])
    # Broken lanes (lane_health.py) had no rate: the plan says so and where the products went instead.
    result = with_outage_events(result, down, stored.telescope.name)
    # Legs that wait for another leg of this plan go with it (forward) or in a later plan (second copies).
    skip = {i for i, leg in enumerate(result.legs) if leg.depends_on is not None}
    # A lane planned with more copies in flight than a product has files carries more products at once.
    for leg in result.legs:
        load.deepen((leg.source, leg.destination), copies=leg.lane_copies, files_per_product=leg.files)
    due = due_legs(
        result,
        now_s=0.0,
        slot_seconds=config.slot_seconds,
        done=set(),
        busy_lanes=load.full(),
        skip=skip,
        room=load.room(),
        default_room=load.depth,
    )
    return TelescopePlan(stored.telescope.name, stored, result, carried, due, unplanned)


def _pinned_plan(
    stored: ReplicaPolicy,
    products: list[Product],
    topology: Topology,
    measurements: tuple[Measurement, ...],
    load: LaneLoad,
    config: PlanConfig,
    outside: dict[tuple[str, str], float],
) -> TelescopePlan:
    """The plan of products whose first copy is pinned: the pinned SRCs share the telescope's access link
    (the planner sends each product to its own pin), under the policy's relays and degrade order but with
    one copy each (a campaign or a re-route asks for that copy only). An SRC the telescope has first copies
    in flight to shares the link too, though nothing is queued for it now: a campaign's lane whose products
    are all at the transfer service is still sending."""
    telescope = stored.telescope.name
    srcs = {s.name for s in topology.sites if not s.is_distribution_centre}
    plannable = [p for p in products if p.destination in srcs and topology.path(telescope, p.destination)]
    sending = {site for (source, site), n in load.counts.items() if source == telescope and n}
    # The same pinned planning as a simulated campaign's (planning.pinning), whose pins are all the
    # campaign's destinations.
    weighed = pinned_topology(
        topology, {p.destination for p in plannable if p.destination} | (sending & srcs)
    )
    policy = pinned_policy(planner_policy(stored, weighed))
    unplannable = [p for p in products if p not in plannable]
    if not plannable:
        empty = Plan(lanes=(), legs=(), events=(), replicas={}, degraded_level={})
        return TelescopePlan(telescope, stored, empty, [], [], [], unplannable)
    planned = _plan(stored, plannable, [], weighed, measurements, load, config, policy, outside=outside)
    planned.unplanned_pins = unplannable
    return planned


def cycle_plans(
    *,
    now: dt.datetime,
    config: PlanConfig,
    errors: list[str],
    in_flight: list[arrivals.CopyInFlight] | None = None,
    products: list[Product] | None = None,
) -> Iterator[tuple[TelescopePlan, LaneLoad]]:
    """The plans of one cycle, telescope by telescope, with the lanes' load (the caller takes the room it
    fills before asking for the next plan). A telescope whose plan fails goes to ``errors``.
    ``in_flight``: the first copies in flight and what each has still to copy (by default as
    ``arrivals.copies_in_flight`` reckons them now); ``products``: the queue as the caller read it (by
    default read now)."""
    if products is None:
        products = queued_products(now=now)
    waiting = _waiting_copies()
    telescopes = sorted({p.telescope for p in products} | {w.telescope for w in waiting})
    if not telescopes:
        return
    topology = topology_snapshot()
    if in_flight is None:
        in_flight = arrivals.copies_in_flight(now, arrivals.lane_rates(now))
    load = lane_load(arrivals.bytes_left_by_lane(in_flight), running_transfers(in_flight, now))
    measurements = _measurements()
    outages = unavailable_lanes(topology=topology)  # their pinned products go by policy (lane_health)
    for telescope in telescopes:
        mine = unpin_broken([p for p in products if p.telescope == telescope], outages)
        copies = [w for w in waiting if w.telescope == telescope]
        try:
            others = [p for p in products if p.telescope != telescope]
            plans = plan_telescope(telescope, mine, copies, topology, measurements, load, config, others)
        except PlanInputError as exc:
            errors.append(f"{telescope}: {exc}")
            continue
        for planned in plans:
            yield planned, load
