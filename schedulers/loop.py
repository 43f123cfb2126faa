"""The push loop: plan the SDP queue with the planner, hand the legs that are due to the transfertool.

Each cycle (a Celery beat task, ``schedulers.push_cycle``) snapshots the topology, the products waiting at
the SDPs and the second copies whose first copy has arrived, plans each telescope's share of them under
the telescope's stored policy (translated by ``snapshot.planner_policy``) with what the lanes delivered so
far (the measurement history), and submits, for every free lane, the first leg whose slot has come:

* a primary leg as one job (streams and concurrent files from the plan);
* a relay leg and the forward leg that waits for it as one multihop job through the distribution centre;
* a second copy (``two_replicas``: the SRC to its partner; ``full_copy``: the SRC to the copy site) as one
  job from the SRC that received the product, once that copy is available.

When a product's first leg goes, every replica its policy asks for gets a row: the first copy COPYING, a
second or full copy PLANNED with ``upstream`` pointing at the first. The product is PLACED only when all of
them are available (``replicas.services.settle_replica``). A lane carries one product at a time, so a
product on a busy lane waits for the next cycle, in the planner's order (priority and deadline)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from django.db import connection, transaction
from django.db.models import Count, Sum
from django.utils import timezone

from replicas.choices import PolicyKind as StoredKind
from replicas.choices import ProductState, ReplicaState
from replicas.models import DataProduct, Replica, ReplicaPolicy
from replicas.rucio_sync import RUCIO_RULE_REASON
from replicas.services import active_policy, place_replica
from topology.choices import StorageRole
from topology.models import RegionalCentre, StorageEndpoint, Telescope

from .enforcement import enforce_links, hop_links
from .lane_health import pinned_copy, unavailable_lanes, unpin_broken, with_outage_events
from .models import PathMeasurement, PushCycle
from .planning.dispatch import JobHints, due_legs, job_hints
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
from .rucio_placement import place_by_rule, through_rucio
from .snapshot import planner_policy, policy_topology, queued_products, topology_snapshot
from .transfertool import JobParams, TransferRequest, Transfertool, TransfertoolError
from .transfertools import default_transfertool

MEASUREMENT_HISTORY = 200

ACTIVITY = "SKA Data Products"  # FTS3's activity of every push job (activity shares), and Rucio's


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


def _busy_lanes() -> set[tuple[str, str]]:
    """Lanes (source site, destination site) with a product on its way. A copy waiting for its upstream
    replica holds no lane, nor does a pinned first copy still queued; a relayed copy holds both its hops."""
    busy: set[tuple[str, str]] = set()
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
                busy.add((upstream, site))
        elif via is not None:
            busy |= {(telescope, via), (via, site)}
        else:
            busy.add((telescope, site))
    return busy


def _waiting_copies() -> list[WaitingCopy]:
    """Planned copies whose upstream replica has arrived, oldest first, as legs for the planner to carry.
    A copy whose upstream came by a Rucio rule is Rucio's to make (``RucioAdapter.place_waiting_copies``,
    run as rules are followed), not the loop's."""
    rows = (
        Replica.objects.filter(state=ReplicaState.PLANNED, upstream__state=ReplicaState.AVAILABLE)
        .exclude(upstream__reason__startswith=RUCIO_RULE_REASON)
        .select_related("product__telescope", "endpoint__site", "upstream__endpoint__site")
        .exclude(upstream__reason__contains=f"; {RUCIO_RULE_REASON} ")
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
    rows = PathMeasurement.objects.filter(succeeded=True)[:MEASUREMENT_HISTORY]
    return tuple(
        Measurement(
            source=m.source, destination=m.destination, streams=m.streams, throughput_bps=m.throughput_bps
        )
        for m in rows
    )


def _site_endpoint(site: str) -> StorageEndpoint:
    """Where copies land at ``site``: a distribution centre's buffer, else the SRC's disk."""
    centre = RegionalCentre.objects.filter(name=site, is_distribution_centre=True).exists()
    role = StorageRole.BUFFER if centre else StorageRole.DISK
    endpoint = StorageEndpoint.objects.filter(site__name=site, role=role, is_active=True).first()
    if endpoint is None:
        raise TransfertoolError(f"{site} has no active {role} storage endpoint")
    return endpoint


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
    busy: set[tuple[str, str]],
    config: PlanConfig,
) -> list[TelescopePlan]:
    """Plan one telescope's products and waiting copies under its active stored policy (nothing is
    submitted): one plan for the products the policy places, and one for the products whose first copy is
    pinned to a site; raises ``PlanInputError`` if the policy does not fit the topology."""
    stored = active_policy(Telescope.objects.get(name=telescope), create=False)
    free = [p for p in products if p.destination is None]
    plans = []
    if free or waiting:
        weighed = policy_topology(stored, topology)
        plans.append(_plan(stored, free, waiting, weighed, measurements, busy, config))
    pinned = [p for p in products if p.destination is not None]
    if pinned:
        plans.append(_pinned_plan(stored, pinned, topology, measurements, busy, config))
    return plans


def _plan(
    stored: ReplicaPolicy,
    products: list[Product],
    waiting: list[WaitingCopy],
    topology: Topology,
    measurements: tuple[Measurement, ...],
    busy: set[tuple[str, str]],
    config: PlanConfig,
    policy: PlannerPolicy | None = None,
) -> TelescopePlan:
    policy = policy or planner_policy(stored, topology)
    lanes = lane_demands(policy, topology, config).keys()
    carried = [c for c in waiting if (c.leg.source, c.leg.destination) in lanes]
    # A copy placed before its policy changed may have no lane in the policy now: it goes outside the plan.
    unplanned = [c for c in waiting if (c.leg.source, c.leg.destination) not in lanes]
    down = unavailable_lanes(topology=topology)
    state = LiveState(placed_bytes=_placed_bytes(), measurements=measurements, unavailable_lanes=down.keys())
    result = plan(products, topology, policy, state, config, carry_over=[c.leg for c in carried])
    # Broken lanes (lane_health.py) had no rate: the plan says so and where the products went instead.
    result = with_outage_events(result, down, stored.telescope.name)
    # Legs that wait for another leg of this plan go with it (forward) or in a later plan (second copies).
    skip = {i for i, leg in enumerate(result.legs) if leg.depends_on is not None}
    due = due_legs(
        result, now_s=0.0, slot_seconds=config.slot_seconds, done=set(), busy_lanes=busy, skip=skip
    )
    return TelescopePlan(stored.telescope.name, stored, result, carried, due, unplanned)


def _pinned_plan(
    stored: ReplicaPolicy,
    products: list[Product],
    topology: Topology,
    measurements: tuple[Measurement, ...],
    busy: set[tuple[str, str]],
    config: PlanConfig,
) -> TelescopePlan:
    """The plan of products whose first copy is pinned: the pinned SRCs share the telescope's access link
    (the planner sends each product to its own pin), under the policy's relays and degrade order but with
    one copy each (a campaign or a re-route asks for that copy only)."""
    telescope = stored.telescope.name
    srcs = {s.name for s in topology.sites if not s.is_distribution_centre}
    plannable = [p for p in products if p.destination in srcs and topology.path(telescope, p.destination)]
    # The same pinned planning as a simulated campaign's (planning.pinning).
    weighed = pinned_topology(topology, {p.destination for p in plannable if p.destination})
    policy = pinned_policy(planner_policy(stored, weighed))
    outside = [p for p in products if p not in plannable]
    if not plannable:
        empty = Plan(lanes=(), legs=(), events=(), replicas={}, degraded_level={})
        return TelescopePlan(telescope, stored, empty, [], [], [], outside)
    planned = _plan(stored, plannable, [], weighed, measurements, busy, config, policy)
    planned.unplanned_pins = outside
    return planned


def cycle_plans(
    *, now: dt.datetime, config: PlanConfig, errors: list[str]
) -> Iterator[tuple[TelescopePlan, set[tuple[str, str]]]]:
    """The plans of one cycle, telescope by telescope, with the busy lanes (the caller adds the lanes it
    fills before asking for the next plan). A telescope whose plan fails goes to ``errors``."""
    products = queued_products(now=now)
    waiting = _waiting_copies()
    telescopes = sorted({p.telescope for p in products} | {w.telescope for w in waiting})
    if not telescopes:
        return
    topology = topology_snapshot()
    busy = _busy_lanes()
    measurements = _measurements()
    outages = unavailable_lanes(topology=topology)  # their pinned products go by policy (lane_health)
    for telescope in telescopes:
        mine = unpin_broken([p for p in products if p.telescope == telescope], outages)
        copies = [w for w in waiting if w.telescope == telescope]
        try:
            plans = plan_telescope(telescope, mine, copies, topology, measurements, busy, config)
        except PlanInputError as exc:
            errors.append(f"{telescope}: {exc}")
            continue
        for planned in plans:
            yield planned, busy


def push_cycle(
    *,
    now: dt.datetime | None = None,
    transfertool: Transfertool | None = None,
    config: PlanConfig | None = None,
) -> PushCycle:
    """One pass of the push loop; returns the recorded cycle (its ``error`` says why something did not
    move: a telescope whose plan fails does not stop the others)."""
    with transaction.atomic():
        _one_cycle_at_a_time()
        return _run_cycle(now=now or timezone.now(), transfertool=transfertool, config=config or PlanConfig())


# Cycles come from the beat, from a lane that freed, from a push through the API: one at a time, or two of
# them would read the same queue and put two products on one lane.
PUSH_CYCLE_LOCK = 0x53524E50  # any constant the platform uses for nothing else


def _one_cycle_at_a_time() -> None:
    """Wait for any other cycle to end (commit), then hold the lock until this cycle's transaction ends."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [PUSH_CYCLE_LOCK])


def _run_cycle(*, now: dt.datetime, transfertool: Transfertool | None, config: PlanConfig) -> PushCycle:
    report = CycleReport()
    try:
        report.products_queued = len(queued_products(now=now))
        # A misconfigured transfertool (say fts3 with no URL) is this cycle's error, recorded like any other.
        tool = transfertool or default_transfertool()
        for planned, busy in cycle_plans(now=now, config=config, errors=report.errors):
            report.legs_planned += len(planned.result.legs)
            report.events += [
                {"time_s": e.time_s, "telescope": e.telescope, "kind": e.kind, "detail": e.detail}
                for e in planned.result.events
            ]
            try:
                _dispatch(planned, busy, tool, report, config)
            except TransfertoolError as exc:
                report.errors.append(f"{planned.telescope}: {exc}")
    except (PlanInputError, TransfertoolError) as exc:
        report.errors.append(str(exc))
    return PushCycle.objects.create(
        products_queued=report.products_queued,
        legs_planned=report.legs_planned,
        legs_submitted=len(report.submitted),
        submitted=report.submitted,
        events=report.events,
        error="; ".join(report.errors),
    )


def _dispatch(
    planned: TelescopePlan,
    busy: set[tuple[str, str]],
    tool: Transfertool,
    report: CycleReport,
    config: PlanConfig,
) -> None:
    """Submit the plan's due legs: first copies (with the replicas their policy asks for) and copies whose
    upstream replica has arrived."""
    legs = planned.result.legs
    by_dependency = {leg.depends_on: leg for leg in legs if leg.depends_on is not None}
    seconds = {
        leg.product_id: leg for leg in legs if leg.role == LegRole.SECOND and leg.depends_on is not None
    }
    for index in planned.due:
        leg = legs[index]
        if index >= planned.first_carried:
            entry = _submit_copy(planned.carried[index - planned.first_carried].replica_id, leg, tool)
        elif leg.role in (LegRole.PRIMARY, LegRole.RELAY):
            forward = by_dependency.get(index) if leg.role == LegRole.RELAY else None
            first = _submit_first(leg, forward, seconds.get(leg.product_id), planned.policy, tool)
            if first is None:
                continue  # placed by another cycle since this one read the queue
            entry = first
            if forward is not None:
                busy.add((forward.source, forward.destination))
        else:
            continue
        busy.add((leg.source, leg.destination))
        report.submitted.append(entry)
    for product in planned.unplanned_pins:
        lane = (product.telescope, product.destination or "")
        if lane in busy:
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
        pinned = _submit_first(leg, None, None, planned.policy, tool, note="outside the plan (pinned)")
        if pinned is not None:
            report.submitted.append(pinned)
            busy.add(lane)
    for copy in planned.unplanned:
        lane = (copy.leg.source, copy.leg.destination)
        if lane in busy:
            continue
        # No plan for this lane: one stream, as many files at once as the planner would allow.
        leg = replace(copy.leg, streams=1, files=min(copy.leg.files, config.max_files))
        note = f"outside the plan ({planned.policy.name} has no lane {lane[0]} -> {lane[1]} now)"
        report.submitted.append(_submit_copy(copy.replica_id, leg, tool, note=note))
        busy.add(lane)


def _why(leg: Leg, hints: JobHints, final: str, via: str | None) -> str:
    return (
        f"push plan: {leg.source} -> {final}{' via ' + via if via else ''}, slot {leg.start_slot}, "
        f"{hints.streams} streams x {hints.concurrent_files} files, priority {leg.priority}"
    )


def copy_placement(policy: ReplicaPolicy, source: str, destination: str) -> str:
    """Why a second or full copy was placed (the start of its replica's reason)."""
    if policy.kind == StoredKind.FULL_COPY:
        what = f"full copy at {destination}"
    else:
        what = "second copy (redistribution to the partner SRC)"
    return (
        f"{policy.name} ({policy.kind}): {what}, {source} -> {destination} "
        f"once the copy at {source} is available"
    )


@transaction.atomic
def _submit_first(
    leg: Leg,
    forward: Leg | None,
    second: Leg | None,
    policy: ReplicaPolicy,
    tool: Transfertool,
    *,
    note: str = "",
) -> dict[str, Any] | None:
    """Place the product's replicas (its first copy at the leg's final destination, and the second or full
    copy its policy asks for) and submit the first copy (multihop for a relay). A product whose first copy
    is pinned keeps that replica and gets no other. None if the product left the queue meanwhile."""
    scope, _, name = leg.product_id.partition(":")
    product = (
        DataProduct.objects.select_for_update()
        .select_related("source", "telescope")
        .get(scope=scope, name=name)
    )
    if product.state != ProductState.REGISTERED:
        return None
    final = forward.destination if forward else leg.destination
    via = leg.destination if forward else None
    hints = job_hints(leg)
    plan_why = note or _why(leg, hints, final, via)
    pin = pinned_copy(product, final)  # None also when its lane broke and the policy placed it elsewhere
    if pin is not None:
        replica, destination = pin, pin.endpoint
        why = f"{pin.reason}; {plan_why}"
        replica.state = ReplicaState.COPYING
        replica.via = RegionalCentre.objects.get(name=via) if via else None
    else:
        if policy.pk is None:  # the telescope's default policy, first used now
            policy = active_policy(product.telescope)
        destination = _site_endpoint(final)
        role = "relayed first copy" if via else "first copy"
        why = f"{policy.name} ({policy.kind}): {role}; {plan_why}"
        replica = place_replica(
            product=product,
            endpoint=destination,
            policy=policy,
            state=ReplicaState.COPYING,
            reason=why,
            via=RegionalCentre.objects.get(name=via) if via else None,
        )
        if second is not None:
            place_replica(
                product=product,
                endpoint=_site_endpoint(second.destination),
                policy=policy,
                state=ReplicaState.PLANNED,
                upstream=replica,
                reason=copy_placement(policy, second.source, second.destination),
            )
    product.state = ProductState.PLACING
    product.save(update_fields=["state"])
    hops = [(product.source, _site_endpoint(via))] if via else [(product.source, destination)]
    if via:
        hops.append((hops[0][1], destination))
    job_id, handle = _submit_job(product, hops, hints, replica, [leg.source, final], tool)
    replica.reason = f"{why}; {handle}"
    replica.save(update_fields=["state", "via", "reason", "updated"])
    return {
        "product": product.did,
        "role": leg.role.value if not note else "pinned copy",
        "lane": [leg.source, final],
        "via": via,
        "job_id": job_id,
        "priority": hints.priority,
        "streams": hints.streams,
        "files": hints.concurrent_files,
        "slot": leg.start_slot,
    }


@transaction.atomic
def _submit_copy(replica_id: int, leg: Leg, tool: Transfertool, *, note: str = "") -> dict[str, Any]:
    """Submit a second or full copy from the SRC that holds the product to the replica's SRC."""
    replica = (
        Replica.objects.select_for_update(of=("self",))
        .select_related("product", "endpoint", "upstream__endpoint")
        .get(pk=replica_id)
    )
    upstream = replica.upstream
    assert upstream is not None
    hints = job_hints(leg)
    why = f"{replica.reason}; {note or _why(leg, hints, leg.destination, None)}"
    replica.state = ReplicaState.COPYING
    job_id, handle = _submit_job(
        replica.product,
        [(upstream.endpoint, replica.endpoint)],
        hints,
        replica,
        [leg.source, leg.destination],
        tool,
    )
    replica.reason = f"{why}; {handle}"
    replica.save(update_fields=["state", "reason", "updated"])
    return {
        "product": replica.product.did,
        "role": leg.role.value if not note else "unplanned copy",
        "lane": [leg.source, leg.destination],
        "via": None,
        "job_id": job_id,
        "priority": hints.priority,
        "streams": hints.streams,
        "files": hints.concurrent_files,
        "slot": leg.start_slot,
    }


def _submit_job(
    product: DataProduct,
    hops: list[tuple[StorageEndpoint, StorageEndpoint]],
    hints: JobHints,
    replica: Replica,
    lane: list[str],
    tool: Transfertool,
) -> tuple[str, str]:
    """One transfer job over ``hops`` (more than one: a multihop job), every file of the product per hop, or
    in Rucio mode one rule at the last hop's destination; returns its id and how the replica's reason
    names it."""
    scheme = hops[-1][1].tpc_scheme
    multihop = len(hops) > 1
    requests = []
    for source_endpoint, target in hops:
        for f in product.files.all():
            requests.append(
                TransferRequest(
                    source=source_endpoint.url(scheme, f.relative_path),
                    destination=target.url(scheme, f.relative_path),
                    filesize=f.size_bytes,
                    checksum=f"ADLER32:{f.adler32}",
                    metadata={"product": product.did, "file": f.name},
                )
            )
    # The plan's concurrent files become each hop's link concurrency (a reserved path: fixed, no optimizer),
    # through the transfertool's /config/links, so any FTS3 obeys it (Rucio's conveyor's jobs too).
    enforce_links(tool, hop_links(tool, hops, scheme, hints.concurrent_files))
    if through_rucio():
        rule_id = place_by_rule(product, hops[-1][1], replica, activity=ACTIVITY)
        return rule_id, f"{RUCIO_RULE_REASON} {rule_id}"
    job_id = tool.submit(
        requests,
        JobParams(
            priority=hints.priority,
            activity=ACTIVITY,
            streams=hints.streams_per_file,
            multihop=multihop,
            metadata={
                "replica_id": replica.pk,
                "product": product.did,
                "lane": lane,
                "streams": hints.streams,
                "streams_per_file": hints.streams_per_file,
                "files": hints.concurrent_files,
                "multihop": multihop,
            },
        ),
    )
    return job_id, f"transfer job {job_id}"
