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
from django.utils import timezone

from replicas.services import active_policy
from transfertools.interface import Transfertool, TransfertoolError

from . import arrivals
from .enforcement import links_set_once
from .lane_load import LaneLoad
from .leg_submission import follow_lane_limits, submit_copy, submit_first
from .missed_ends import settle_missed_ends
from .models import PushCycle
from .plan_settings import plan_config
from .planning.types import (
    Leg,
    LegRole,
    PlanConfig,
    PlanInputError,
)
from .rucio_placement import through_rucio
from .snapshot import queue_length, queued_products
from .telescope_plans import TelescopePlan, cycle_plans
from .transfertools import default_transfertool

# The submissions of a product's first copy (leg_submission's entries): its prediction then is kept.
FIRST_COPY_ENTRIES = {"primary", "relay", "pinned copy"}


@dataclass
class CycleReport:
    products_queued: int = 0
    legs_planned: int = 0
    submitted: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


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
        # The queue's head is read once and planned (a rolling horizon: snapshot.head_of_queue); the count
        # reported is the whole queue.
        queue = queued_products(now=now)
        report.products_queued = queue_length()
        arrivals.forget_beyond_horizon(p.id for p in queue)
        # A misconfigured transfertool (say fts3 with no URL) is this cycle's error, recorded like any other.
        tool = transfertool or default_transfertool()
        rates = arrivals.lane_rates(now)
        in_flight = arrivals.copies_in_flight(now, rates)
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
        # The products whose first copy is already moving: predicted again from their lane's queue, last, so
        # that their rows are locked for the end of the cycle only: a copy that ends meanwhile settles its
        # product (replicas.services.settle_request), which waited for the whole cycle when this came first
        # (112-138 ms a product in bench/control_plane's runs of 2026-11-30).
        arrivals.record_in_flight(arrivals.in_flight_predictions(in_flight, rates), now)
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
