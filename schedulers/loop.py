"""The push loop: plan the SDP queue with the planner, hand the legs that are due to the transfertool.

Each cycle (a Celery beat task, ``schedulers.push_cycle``) snapshots the topology, the products waiting at
the SDPs and the second copies whose first copy has arrived, plans each telescope's share of them under
the telescope's stored policy (translated by ``snapshot.planner_policy``) with what the lanes delivered so
far (the measurement history), and submits, for every lane with room, the first leg whose slot has come
and the legs after it while the lane has room (``lane_load``: up to ``SRCNET_LANE_DEPTH`` products at once,
more on a lane whose planned copies in flight need more products to fill them):

* a primary leg as one job (streams and concurrent files from the plan);
* a relay leg and the forward leg that waits for it as one multihop job through the distribution centre;
* a second copy (``two_replicas``: the SRC to its partner; ``full_copy``: the SRC to the copy site) as one
  job from the SRC that received the product, once that copy is available.

When a product's first leg goes, every replica its policy asks for gets a row: the first copy COPYING, a
second or full copy PLANNED with ``upstream`` pointing at the first. The product is PLACED only when all of
them are available (``replicas.services.settle_request``). A product on a full lane waits for a later
cycle, in the planner's order (priority and deadline). Handing a leg on is ``leg_submission``'s."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from django.db import connection, transaction
from django.db.models import Count, Sum
from django.utils import timezone

from replicas.choices import ReplicaState
from replicas.models import Replica, ReplicaPolicy
from replicas.services import active_policy
from topology.choices import StorageRole
from topology.models import Telescope
from transfertools.interface import Transfertool, TransfertoolError

from . import arrivals
from .enforcement import links_set_once
from .lane_health import unavailable_lanes, unpin_broken, with_outage_events
from .lane_load import LaneLoad, lane_load
from .leg_submission import follow_lane_limits, submit_copy, submit_first
from .measurements import running_transfers
from .missed_ends import settle_missed_ends
from .models import PathMeasurement, PushCycle
from .plan_settings import plan_config
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
from .rucio_placement import through_rucio
from .snapshot import planner_policy, policy_topology, queued_products, topology_snapshot
from .transfertools import default_transfertool

MEASUREMENT_HISTORY = 200
# The submissions of a product's first copy (leg_submission's entries): its prediction then is kept.
FIRST_COPY_ENTRIES = {"primary", "relay", "pinned copy"}


@dataclass
class CycleReport:
    products_queued: int = 0
    legs_planned: int = 0
    submitted: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


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


def push_cycle(
    *,
    now: dt.datetime | None = None,
    transfertool: Transfertool | None = None,
    config: PlanConfig | None = None,
) -> PushCycle:
    """One pass of the push loop, after any cycle running now; returns the recorded cycle (its ``error``
    says why something did not move: a telescope whose plan fails does not stop the others)."""
    with transaction.atomic():
        _one_cycle_at_a_time(wait=True)
        return _run_cycle(
            now=now or timezone.now(), transfertool=transfertool, config=config or plan_config()
        )


def push_cycle_unless_running() -> PushCycle | None:
    """One pass of the push loop, or None at once if another cycle is running."""
    with transaction.atomic():
        if not _one_cycle_at_a_time(wait=False):
            return None
        return _run_cycle(now=timezone.now(), transfertool=None, config=plan_config())


# Cycles come from the beat, from a lane that freed, from a push through the API: one at a time, or two of
# them would read the same queue and put two products on one lane.
PUSH_CYCLE_LOCK = 0x53524E50  # any constant the platform uses for nothing else


def _one_cycle_at_a_time(*, wait: bool = True) -> bool:
    """Hold the lock until this cycle's transaction ends, waiting for any other cycle to end (commit) first;
    without ``wait``, False at once if another cycle holds it."""
    with connection.cursor() as cursor:
        if wait:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [PUSH_CYCLE_LOCK])
            return True
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [PUSH_CYCLE_LOCK])
        return bool(cursor.fetchone()[0])


def _run_cycle(*, now: dt.datetime, transfertool: Transfertool | None, config: PlanConfig) -> PushCycle:
    started = time.monotonic()
    if through_rucio():
        # Rucio's conveyor chooses each copy's path: a relay leg could not be carried as planned, so the
        # plans of a cycle in Rucio mode make none, whatever config the caller passed.
        config = replace(config, relays=False)
    report = CycleReport()
    # A job of the own service that ended before its copy request was written settles now (missed_ends.py):
    # its lane's room and its product's state are right before this cycle reads them.
    for job_id in settle_missed_ends():
        report.events.append(
            {"time_s": 0.0, "telescope": "", "kind": "missed_end", "detail": f"job {job_id}"}
        )
    try:
        # The queue is read once: the count reported is the queue this cycle plans.
        queue = queued_products(now=now)
        report.products_queued = len(queue)
        # A misconfigured transfertool (say fts3 with no URL) is this cycle's error, recorded like any other.
        tool = transfertool or default_transfertool()
        rates = arrivals.lane_rates(now)
        in_flight = arrivals.copies_in_flight(now, rates)
        # The products whose first copy is already moving: predicted again from their lane's queue.
        arrivals.record_in_flight(arrivals.in_flight_predictions(in_flight, rates), now)
        for planned, load in _with_links_set_once(
            tool,
            cycle_plans(now=now, config=config, errors=report.errors, in_flight=in_flight, products=queue),
        ):
            report.legs_planned += len(planned.result.legs)
            # Before the submissions take room on the lanes: why a leg waits is the lane as the plan saw it.
            found = arrivals.predictions(
                planned.result.legs, planned.due, load, rates=rates, backlog=load.bytes_left
            )
            arrivals.record(found, now)
            report.events += [
                {"time_s": e.time_s, "telescope": e.telescope, "kind": e.kind, "detail": e.detail}
                for e in planned.result.events
            ]
            try:
                _dispatch(planned, load, tool, report, config)
            except TransfertoolError as exc:
                report.errors.append(f"{planned.telescope}: {exc}")
    except (PlanInputError, TransfertoolError) as exc:
        report.errors.append(str(exc))
    arrivals.keep_submitted(e["product"] for e in report.submitted if e["role"] in FIRST_COPY_ENTRIES)
    return PushCycle.objects.create(
        products_queued=report.products_queued,
        legs_planned=report.legs_planned,
        legs_submitted=len(report.submitted),
        submitted=report.submitted,
        events=report.events,
        error="; ".join(report.errors),
        duration_seconds=time.monotonic() - started,
    )


def _with_links_set_once(tool: Transfertool, plans: Iterator[Any]) -> Iterator[Any]:
    """``plans``, with the cycle's link limits set once each on ``tool`` while they are submitted."""
    with links_set_once(tool):
        yield from plans


def _dispatch(
    planned: TelescopePlan,
    load: LaneLoad,
    tool: Transfertool,
    report: CycleReport,
    config: PlanConfig,
) -> None:
    """Submit the plan's due legs: first copies (with the replicas their policy asks for) and copies whose
    upstream replica has arrived."""
    legs = planned.result.legs
    policy = planned.policy
    if policy.pk is None and (planned.due or planned.unplanned_pins):
        policy = active_policy(policy.telescope)  # the telescope's default, saved once for the cycle's copies
    by_dependency = {leg.depends_on: leg for leg in legs if leg.depends_on is not None}
    seconds = {
        leg.product_id: leg for leg in legs if leg.role == LegRole.SECOND and leg.depends_on is not None
    }
    for index in planned.due:
        leg = legs[index]
        if index >= planned.first_carried:
            entry = submit_copy(planned.carried[index - planned.first_carried].replica_id, leg, tool)
        elif leg.role in (LegRole.PRIMARY, LegRole.RELAY):
            forward = by_dependency.get(index) if leg.role == LegRole.RELAY else None
            first = submit_first(leg, forward, seconds.get(leg.product_id), policy, tool)
            if first is None:
                continue  # placed by another cycle since this one read the queue
            entry = first
            if forward is not None:
                load.take((forward.source, forward.destination))
        else:
            continue
        load.take((leg.source, leg.destination))
        report.submitted.append(entry)
    # Every lane out of the telescope with copies in flight gets the plan's copies, also with nothing new
    # to submit on it (its share grew as another lane's work ended).
    following = {
        lane: copies
        for lane, copies in planned.result.lane_copies.items()
        if load.counts[lane] > 0 and lane[0] == planned.telescope
    }
    for link in follow_lane_limits(following, tool):
        report.events.append(
            {
                "time_s": 0.0,
                "telescope": planned.telescope,
                "kind": "limit",
                "detail": f"{link.source} -> {link.destination}: {link.max_active} copies at once",
            }
        )
    for product in planned.unplanned_pins:
        lane = (product.telescope, product.destination or "")
        if load.is_full(lane):
            continue
        # A pin the planner cannot carry (a distribution centre's buffer): one stream, the plan's files.
        leg = Leg(
            product_id=product.id,
            role=LegRole.PRIMARY,
            source=product.telescope,
            destination=lane[1],
            links=(),
            streams=1,
            files=min(product.files, config.max_files),
            start_s=0.0,
            start_slot=0,
            finish_s=0.0,
            rate_bps=0.0,
            priority=product.priority,
            size_bytes=product.size_bytes,
        )
        pinned = submit_first(leg, None, None, policy, tool, note="outside the plan (pinned)")
        if pinned is not None:
            report.submitted.append(pinned)
            load.take(lane)
    for copy in planned.unplanned:
        lane = (copy.leg.source, copy.leg.destination)
        if load.is_full(lane):
            continue
        # No plan for this lane: one stream, as many files at once as the planner would allow.
        leg = replace(copy.leg, streams=1, files=min(copy.leg.files, config.max_files))
        note = f"outside the plan ({planned.policy.name} has no lane {lane[0]} -> {lane[1]} now)"
        report.submitted.append(submit_copy(copy.replica_id, leg, tool, note=note))
        load.take(lane)
