"""Simulated campaigns: the campaign's own workload through the flow-level simulator, scored against the
curve that workload followed.

The products are those a real campaign makes (``campaigns.workload``: the same curve with its ramp, the
same sources and destinations round-robin, the same file sizes and seeds). Each is pinned to its
destination's site (``Product.destination``) and planned as the push loop plans a real campaign's pinned
products (``schedulers.planning.pinning``): each telescope's lanes go to the SRCs it sends to, which
share its access link, one copy each. The scenario chooses parallel or slot planning and the relays.
The simulator runs for the duration, then for the drain a real campaign allows its last products."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.utils import timezone

from schedulers.planning.types import Product

from .feasibility import Placement, SimulatedInputError, placement
from .models import Campaign, CampaignSample
from .workload import Workload, WorkloadProduct

if TYPE_CHECKING:
    from schedulers.simulation.report import ScenarioRun

MAX_BIN_SECONDS = 300.0  # the simulator's bins, and so the simulated campaign's samples


def pinned_products(c: Campaign, place: Placement) -> list[tuple[WorkloadProduct, Product]]:
    """The campaign's products, each as the simulator's Product pinned to its destination's site."""
    return [
        (
            wp,
            Product(
                id=f"c{c.pk}-{wp.index:06d}",
                telescope=place.telescope_of[wp.source],
                size_bytes=float(wp.size_bytes),
                arrival_s=arrival,
                files=len(wp.files),
                file_bytes=tuple(float(f.size_bytes) for f in wp.files),
                destination=place.site_of[wp.destination],
            ),
        )
        for arrival, wp in Workload.of(c).arrivals()
    ]


def bin_seconds(duration_s: float) -> float:
    """At most MAX_BIN_SECONDS, and the duration a whole number of bins (the access links' use over the
    duration is then exact)."""
    return duration_s / max(1, math.ceil(duration_s / MAX_BIN_SECONDS - 1e-9))


def until_seconds(c: Campaign) -> float:
    """How long the simulator runs: the duration, then the drain."""
    return c.duration_seconds + c.drain_seconds()


def simulate(c: Campaign, out: Path) -> tuple[list[tuple[WorkloadProduct, Product]], ScenarioRun, Placement]:
    """Check the inputs, build the workload, run the simulator; its report goes into ``out``."""
    from schedulers.simulations import simulate_workload

    place = placement(c)
    pinned = pinned_products(c, place)
    run = simulate_workload(
        place.scenario,
        place.topology,
        [p for _, p in pinned],
        until_s=until_seconds(c),
        bin_s=bin_seconds(c.duration_seconds),
        out=out,
    )
    return pinned, run, place


def score_run(
    c: Campaign, pinned: list[tuple[WorkloadProduct, Product]], run: ScenarioRun, place: Placement
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The campaign's summary and samples from a simulator run of its workload."""
    from .scoring import access_links, outcomes, simulated_samples, simulated_score

    assert run.result is not None
    workload = Workload.of(c)
    done = outcomes(pinned, run.result)
    until = until_seconds(c)
    summary = {
        "scenario": c.scenario,
        **simulated_score(workload, done, until),
        "access_links": access_links(run.result, list(place.telescope_of.values()), c.duration_seconds),
        "compute_seconds": run.wall_s,
    }
    return summary, simulated_samples(workload, done, run.result.config.bin_s, until)


def run_simulated(campaign_id: int) -> str:
    """Run the campaign's workload through the simulator; keep its report, score it, record samples."""
    from django.core.exceptions import ImproperlyConfigured

    from schedulers.simulations import SimulationRequestError, read_summary

    from .queueing import enqueue_advance
    from .report import report_dir, write_simulated_report

    c = Campaign.objects.get(pk=campaign_id)
    if c.start_at and c.start_at > timezone.now() and c.state == Campaign.State.SCHEDULED:
        enqueue_advance(campaign_id, c.generation, eta=c.start_at)
        return "scheduled"
    if not Campaign.objects.filter(pk=campaign_id, state=Campaign.State.SCHEDULED).update(
        state=Campaign.State.RUNNING, started=timezone.now()
    ):
        return "not scheduled"  # a redelivered message: the first delivery owns the run
    out = report_dir(campaign_id)
    try:
        pinned, run, place = simulate(c, out)
    # A deployment setting the simulator cannot use (SRCNET_SITES_CONGESTION_CONTROL, SRCNET_NETWORK_MTU)
    # fails the campaign naming it, as bad input does.
    except (SimulatedInputError, SimulationRequestError, ImproperlyConfigured, OSError) as exc:
        Campaign.objects.filter(pk=campaign_id).update(
            state=Campaign.State.FAILED, error=str(exc), finished=timezone.now()
        )
        return "failed"
    summary, samples = score_run(c, pinned, run, place)
    with transaction.atomic():
        c = Campaign.objects.select_for_update().get(pk=campaign_id)
        c.samples.all().delete()
        CampaignSample.objects.bulk_create(CampaignSample(campaign=c, **s) for s in samples)
        c.summary = {"simulator": read_summary(out), **summary}
        # The report is whole before anyone sees the campaign finished (a client downloads it then).
        write_simulated_report(c)
        c.state, c.finished = Campaign.State.FINISHED, timezone.now()
        c.active_seconds = c.duration_seconds
        c.generated_bytes, c.products_created = summary["offered_bytes"], summary["products"]
        c.save()
    return "finished"
