"""The push loop: plan the SDP queue with the planner, hand the legs that are due to the transfertool.

Each cycle (a Celery beat task, ``schedulers.push_cycle``) snapshots the topology and the products waiting
at the SDPs, plans them under the telescope's policy with what the lanes delivered so far (the
measurement history), and submits, for every free lane, the first leg whose slot has come: a primary leg
as one job (streams and concurrent files from the plan), a relay leg and the forward leg that waits for it
as one multihop job through the distribution centre. A lane carries one product at a time, so a product
on a busy lane waits for the next cycle, in the planner's order (priority and deadline)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from replicas.choices import ProductState, ReplicaState
from replicas.models import DataProduct, Replica, ReplicaPolicy
from replicas.services import active_policy
from topology.choices import StorageRole
from topology.models import StorageEndpoint
from transfers.models import LinkLimit
from transfers.storage_urls import storage_element

from .models import PathMeasurement, PushCycle
from .planning.dispatch import due_legs, job_hints
from .planning.planner import plan
from .planning.policies import PolicyKind
from .planning.policies import ReplicaPolicy as PlannerPolicy
from .planning.types import Leg, LegRole, LiveState, Measurement, PlanConfig, PlanInputError
from .snapshot import queued_products, topology_snapshot
from .transfertool import JobParams, TransferRequest, Transfertool, TransfertoolError, default_transfertool

MEASUREMENT_HISTORY = 200
DISTRIBUTION_CENTRES = {"SKA1-Low": "SingaporeDC", "SKA1-Mid": "LondonDC"}


@dataclass
class CycleReport:
    products_queued: int = 0
    legs_planned: int = 0
    submitted: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)


def _planner_policy() -> PlannerPolicy:
    # The 1-replica policy is what the control plane's ReplicaPolicy kinds offer today; relaying through
    # the distribution centres is the planner's backpressure step when an SDP buffer fills.
    return PlannerPolicy(kind=PolicyKind.ONE_REPLICA, relays=DISTRIBUTION_CENTRES)


def _placed_bytes() -> dict[str, float]:
    rows = (
        Replica.objects.exclude(state=ReplicaState.FAILED)
        .exclude(endpoint__role=StorageRole.SDP)
        .values("endpoint__site__name")
        .annotate(total=Sum("product__files__size_bytes"))
    )
    return {r["endpoint__site__name"]: float(r["total"] or 0) for r in rows}


def _busy_lanes() -> set[tuple[str, str]]:
    """Lanes (telescope site, destination site) with a product on its way."""
    rows = (
        Replica.objects.filter(state__in=(ReplicaState.PLANNED, ReplicaState.COPYING))
        .exclude(endpoint__role=StorageRole.SDP)
        .values_list("product__telescope__name", "endpoint__site__name")
    )
    return set(rows)


def _measurements() -> tuple[Measurement, ...]:
    rows = PathMeasurement.objects.filter(succeeded=True)[:MEASUREMENT_HISTORY]
    return tuple(
        Measurement(
            source=m.source, destination=m.destination, streams=m.streams, throughput_bps=m.throughput_bps
        )
        for m in rows
    )


def _disk_endpoint(site: str) -> StorageEndpoint:
    role = StorageRole.BUFFER if site in DISTRIBUTION_CENTRES.values() else StorageRole.DISK
    endpoint = StorageEndpoint.objects.filter(site__name=site, role=role, is_active=True).first()
    if endpoint is None:
        raise TransfertoolError(f"{site} has no active {role} storage endpoint")
    return endpoint


def push_cycle(
    *,
    now: dt.datetime | None = None,
    transfertool: Transfertool | None = None,
    config: PlanConfig | None = None,
) -> PushCycle:
    """One pass of the push loop; returns the recorded cycle (its ``error`` says why nothing moved)."""
    now = now or timezone.now()
    config = config or PlanConfig()
    tool = transfertool or default_transfertool()
    report = CycleReport()
    error = ""
    try:
        products = queued_products(now=now)
        report.products_queued = len(products)
        if products:
            topology = topology_snapshot()
            state = LiveState(placed_bytes=_placed_bytes(), measurements=_measurements())
            result = plan(products, topology, _planner_policy(), state, config)
            report.legs_planned = len(result.legs)
            report.events = [
                {"time_s": e.time_s, "telescope": e.telescope, "kind": e.kind, "detail": e.detail}
                for e in result.events
            ]
            due = due_legs(
                result, now_s=0.0, slot_seconds=config.slot_seconds, done=set(), busy_lanes=_busy_lanes()
            )
            by_dependency = {leg.depends_on: leg for leg in result.legs if leg.depends_on is not None}
            for index in due:
                leg = result.legs[index]
                if leg.role not in (LegRole.PRIMARY, LegRole.RELAY):
                    continue  # forward legs travel with their relay; second copies are not offered yet
                forward = by_dependency.get(index) if leg.role == LegRole.RELAY else None
                report.submitted.append(_submit(leg, forward, tool))
    except (PlanInputError, TransfertoolError) as exc:
        error = str(exc)
    return PushCycle.objects.create(
        products_queued=report.products_queued,
        legs_planned=report.legs_planned,
        legs_submitted=len(report.submitted),
        submitted=report.submitted,
        events=report.events,
        error=error,
    )


@transaction.atomic
def _submit(leg: Leg, forward: Leg | None, tool: Transfertool) -> dict[str, Any]:
    """Place the product at the leg's final destination and submit its copy (multihop for a relay)."""
    scope, _, name = leg.product_id.partition(":")
    product = (
        DataProduct.objects.select_for_update()
        .select_related("source", "telescope")
        .get(scope=scope, name=name)
    )
    final = forward.destination if forward else leg.destination
    destination = _disk_endpoint(final)
    policy: ReplicaPolicy = active_policy(product.telescope)
    hints = job_hints(leg)
    why = (
        f"push plan: {leg.source} -> {final}{' via ' + leg.destination if forward else ''}, "
        f"slot {leg.start_slot}, {hints.streams} streams x {hints.concurrent_files} files, "
        f"priority {leg.priority}"
    )
    replica = Replica.objects.create(
        product=product, endpoint=destination, policy=policy, state=ReplicaState.COPYING, reason=why
    )
    product.state = ProductState.PLACING
    product.save(update_fields=["state"])
    scheme = destination.tpc_scheme
    hops = [(product.source, _disk_endpoint(leg.destination))] if forward else [(product.source, destination)]
    if forward:
        hops.append((hops[0][1], destination))
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
    for source_endpoint, target in hops:
        # The plan's concurrent files become the link's concurrency (a reserved path: fixed, no optimizer).
        LinkLimit.objects.update_or_create(
            source_se=storage_element(source_endpoint.url(scheme, "probe")),
            dest_se=storage_element(target.url(scheme, "probe")),
            defaults={"max_active": hints.concurrent_files, "min_active": 1},
        )
    job_id = tool.submit(
        requests,
        JobParams(
            priority=hints.priority,
            activity="SKA Data Products",
            streams=hints.streams,
            multihop=bool(forward),
            metadata={
                "replica_id": replica.pk,
                "product": product.did,
                "lane": [leg.source, final],
                "streams": hints.streams,
                "files": hints.concurrent_files,
                "multihop": bool(forward),
            },
        ),
    )
    replica.reason = f"{why}; transfer job {job_id}"
    replica.save(update_fields=["reason", "updated"])
    return {
        "product": product.did,
        "lane": [leg.source, final],
        "via": leg.destination if forward else None,
        "job_id": job_id,
        "priority": hints.priority,
        "streams": hints.streams,
        "files": hints.concurrent_files,
        "slot": leg.start_slot,
    }
