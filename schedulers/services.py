"""Pushing products out of the SDP: place by policy, then submit each replica's copy as a transfer job."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from replicas import lifecycle
from replicas.choices import ProductState, ReplicaState
from replicas.models import DataProduct, Replica
from replicas.services import place_product
from transfertools.interface import Transfertool, TransfertoolError


def push_product(*, product: DataProduct, transfertool: Transfertool | None = None) -> list[Replica]:
    """Push ``product`` now, through the push loop: one cycle plans every product waiting at the SDPs
    (this one among them, in the planner's order: priority, deadline) and submits the legs that are due.

    There is no other way out of an SDP: the demo, campaigns, re-routes and the REST/CLI push all come
    here or to the loop's own cycles. A product whose lane is busy stays queued; a later cycle (a lane
    freeing, or the beat) submits it. Returns the product's replicas (none yet while it waits); a product
    already placed is left as it is. A plan that cannot be made for the product's telescope (a policy that
    does not fit the topology) is a ``ValidationError`` naming the policy."""
    from .loop import push_cycle

    product.refresh_from_db(fields=["state"])
    if product.state == ProductState.REGISTERED:
        cycle = push_cycle(transfertool=transfertool)
        problems = [e for e in cycle.error.split("; ") if e.startswith(f"{product.telescope.name}: ")]
        if problems:
            raise ValidationError({"policy": problems})
    return list(
        product.replicas.exclude(endpoint=product.source).select_related("endpoint", "policy").order_by("id")
    )


def request_push_cycle() -> None:
    """Ask a worker for a push cycle once the current transaction commits (products were queued, or a lane
    freed), unless a cycle asked for earlier has not begun yet: it will see this change (at a file rate every
    job that ends asks, several a second; srcnet/pending_asks.py). Sent by task name: services do not import
    tasks."""
    from celery import current_app

    from .cycle_requests import CYCLE_ASK

    def ask() -> None:
        if CYCLE_ASK.first():
            current_app.send_task("schedulers.push_cycle")

    transaction.on_commit(ask)


def place_by_policy(*, product: DataProduct) -> list[Replica]:
    """Every replica the telescope's active policy asks for, PLANNED, nothing submitted: the first copy
    and, for a two-replicas or full-copy policy, the copy to be made from it (with the first as its
    ``upstream``). What ``push_product`` submits, and what Rucio mode turns into rules
    (``RucioAdapter.place_planned``, then ``place_waiting_copies``). Placing twice changes nothing."""
    replicas = place_product(product=product)
    return replicas + _place_second_copies(product, replicas)


def _place_second_copies(product: DataProduct, replicas: list[Replica]) -> list[Replica]:
    """The second or full copy of a product just placed by a two-replicas or full-copy policy."""
    from replicas.choices import PolicyKind

    from .leg_submission import copy_placement, site_endpoint
    from .planning.types import PlanInputError
    from .snapshot import second_copy_site

    placed = []
    for replica in replicas:
        policy = replica.policy
        if (
            replica.state != ReplicaState.PLANNED
            or replica.upstream_id is not None
            or policy is None
            or policy.kind not in (PolicyKind.TWO_REPLICAS, PolicyKind.FULL_COPY)
            or replica.downstream.exists()
        ):
            continue
        primary = replica.endpoint.site.name
        try:
            site = second_copy_site(policy, primary)
            endpoint = site_endpoint(site) if site is not None else None
        except (PlanInputError, TransfertoolError) as exc:
            raise ValidationError({"policy": f"{policy.name}: {exc}"}) from exc
        if site is None or endpoint is None or any(r.endpoint.site.name == site for r in replicas):
            continue
        placed.append(
            lifecycle.new_replica(
                product=product,
                endpoint=endpoint,
                policy=policy,
                state=ReplicaState.PLANNED,
                upstream=replica,
                reason=copy_placement(policy, primary, site),
            )
        )
    return placed


def report_dir(simulation_id: int) -> Path:
    from django.conf import settings

    return settings.SRCNET_REPORTS_DIR / "simulations" / str(simulation_id)


def request_simulation(
    *,
    user: Any,
    scenario: str,
    days: float,
    topology: str = "db",
    failures: bool = False,
    with_lp: bool = True,
) -> Any:
    """Validate a simulation request, store it and run it on a worker after commit."""
    from celery import current_app

    from .models import Simulation
    from .simulations import SimulationRequest

    SimulationRequest(
        scenario=scenario, days=days, topology=topology, failures=failures, with_lp=with_lp
    ).validate()
    simulation = Simulation.objects.create(
        scenario=scenario, days=days, topology=topology, failures=failures, with_lp=with_lp, requested_by=user
    )
    # By name: services do not import tasks.
    transaction.on_commit(lambda: current_app.send_task("schedulers.run_simulation", args=[simulation.pk]))
    return simulation


def run_requested_simulation(simulation_id: int) -> str:
    """Claim a queued simulation, run it, and record its summary or its error."""
    from django.utils import timezone

    from .models import Simulation
    from .simulations import SimulationRequest, SimulationRequestError, read_summary, run_simulation

    if not Simulation.objects.filter(pk=simulation_id, state=Simulation.State.QUEUED).update(
        state=Simulation.State.RUNNING
    ):
        return "not queued"
    simulation = Simulation.objects.get(pk=simulation_id)
    out = report_dir(simulation_id)
    try:
        run_simulation(
            SimulationRequest(
                scenario=simulation.scenario,
                days=simulation.days,
                topology=simulation.topology,
                failures=simulation.failures,
                with_lp=simulation.with_lp,
            ),
            out,
        )
    except (SimulationRequestError, OSError) as exc:
        simulation.state, simulation.error = Simulation.State.FAILED, str(exc)
    else:
        simulation.state, simulation.summary = Simulation.State.DONE, read_summary(out)
    simulation.finished = timezone.now()
    simulation.save(update_fields=["state", "error", "summary", "finished"])
    return simulation.state
