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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.utils import timezone

from schedulers.planning.pinning import pinned_policy, pinned_topology
from schedulers.planning.policies import PolicyKind, validate_policy
from schedulers.planning.types import PlanInputError, Product, Topology
from schedulers.planning.validate import validate_topology

from .models import MAX_SIMULATED_PRODUCTS, Campaign, CampaignSample
from .workload import Workload, WorkloadProduct

if TYPE_CHECKING:
    from schedulers.simulation.report import ScenarioRun
    from schedulers.simulation.scenarios import Scenario

MAX_BIN_SECONDS = 300.0  # the simulator's bins, and so the simulated campaign's samples


class SimulatedInputError(ValueError):
    """The simulator cannot honour the campaign's inputs; ``errors`` maps each field to the reason."""

    def __init__(self, errors: dict[str, str]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{field}: {reason}" for field, reason in errors.items()))


@dataclass(frozen=True)
class Placement:
    """The campaign in the simulator's terms: the scenario and topology as its pinned products are
    planned (planning.pinning), each source's telescope, each destination's site."""

    scenario: Scenario
    topology: Topology
    telescope_of: dict[str, str]
    site_of: dict[str, str]


def _gbps(bps: float) -> str:
    return f"{bps / 1e9:.4g} Gbit/s"


def placement(c: Campaign, *, figures_ok: bool = True) -> Placement:
    """Map the campaign onto the simulator's topology, or raise SimulatedInputError naming each field it
    cannot honour. ``figures_ok``: the rate, duration and file sizes passed their own checks (only then
    are the access links and the number of products checked)."""
    from schedulers.simulation.scenarios import scenarios
    from schedulers.simulations import SimulationRequestError, endpoint_sites, load_topology

    # A campaign asks for one copy at each product's destination, as the push loop plans pinned products:
    # a scenario that makes more copies would not be what a real campaign does.
    every = scenarios()
    known = {
        name: s
        for name, s in every.items()
        if s.policy.kind in (PolicyKind.ONE_REPLICA, PolicyKind.DISTRIBUTION)
    }
    if c.scenario not in known:
        why = (
            "it makes more than one copy, and a campaign asks for one at each product's destination (as "
            "the push loop plans it)"
            if c.scenario in every
            else "unknown"
        )
        raise SimulatedInputError({"scenario": f"{c.scenario!r}: {why}; one of {', '.join(known)}."})
    try:
        topology = load_topology(c.topology)
    except SimulationRequestError as exc:
        raise SimulatedInputError({"topology": str(exc).partition(": ")[2] + "."}) from exc
    where = "the reference topology" if c.topology == "reference" else "the stored topology"
    endpoints = endpoint_sites(c.topology)
    errors: dict[str, str] = {}
    telescopes = {t.name for t in topology.telescopes}
    telescope_of: dict[str, str] = {}
    for name in c.sources:
        site, role = endpoints.get(name, ("", ""))
        telescope = name if name in telescopes else site if role == "sdp" else ""
        if telescope not in telescopes:
            errors["sources"] = (
                f"{name!r} is neither a telescope with an access link nor the SDP endpoint of one in {where}."
            )
            break
        telescope_of[name] = telescope
    centres = {s.name for s in topology.sites if s.is_distribution_centre}
    srcs = {s.name for s in topology.sites} - centres
    site_of: dict[str, str] = {}
    for name in c.destinations:
        site, role = endpoints.get(name, ("", ""))
        if site in centres:
            errors["destinations"] = (
                f"{name!r} is at {site}, a distribution centre: the planner pins first copies to SRCs only."
            )
            break
        if site not in srcs or role == "sdp":
            errors["destinations"] = f"{name!r} is not an SRC storage endpoint of {where}."
            break
        site_of[name] = site
    if errors:
        raise SimulatedInputError(errors)
    workload = Workload.of(c)
    own: dict[str, set[str]] = {}
    for source, destination in workload.pairs():
        telescope, site = telescope_of[source], site_of[destination]
        own.setdefault(telescope, set()).add(site)
        if topology.path(telescope, site) is None:
            errors["destinations"] = (
                f"No path from {telescope} ({source}) to {site} ({destination}) in {where}."
            )
            break
    if figures_ok:
        errors.update(_figure_errors(workload, topology, telescope_of))
    if errors:
        raise SimulatedInputError(errors)
    for t in topology.telescopes:  # a telescope the campaign does not use: the pins it reaches, if any
        reached = {s for s in site_of.values() if topology.path(t.name, s) is not None}
        if t.name not in own and reached:
            own[t.name] = reached
    pinned = pinned_topology(topology, site_of.values(), own)
    scenario = replace(known[c.scenario], policy=pinned_policy(known[c.scenario].policy))
    try:
        validate_topology(pinned)
    except PlanInputError as exc:
        errors["topology"] = f"{where} cannot be simulated: {exc}."
    try:
        validate_policy(scenario.policy, pinned)
    except PlanInputError as exc:
        errors["scenario"] = f"{c.scenario} cannot run on {where}: {exc}."
    if errors:
        raise SimulatedInputError(errors)
    return Placement(scenario, pinned, telescope_of, site_of)


def _figure_errors(workload: Workload, topology: Topology, telescope_of: dict[str, str]) -> dict[str, str]:
    errors: dict[str, str] = {}
    per_telescope: dict[str, float] = {}
    for source, share in workload.source_shares().items():
        per_telescope[telescope_of[source]] = per_telescope.get(telescope_of[source], 0.0) + share
    for telescope, share in sorted(per_telescope.items()):
        link = topology.link(topology.telescope(telescope).access_link)
        rate = workload.target_rate_bps * share
        if rate > link.capacity_bps:
            errors["target_rate_bps"] = (
                f"{telescope} sends {share:.0%} of the products, {_gbps(rate)} of the target: more than its "
                f"access link {link.name} carries ({_gbps(link.capacity_bps)})."
            )
            break
    expected = workload.expected_products()
    if expected > MAX_SIMULATED_PRODUCTS:
        errors["min_file_bytes"] = (
            f"This rate and duration make about {expected:,.0f} products; a simulated campaign makes at most "
            f"{MAX_SIMULATED_PRODUCTS:,}: larger files, or a shorter or slower campaign."
        )
    return errors


def input_errors(c: Campaign, *, figures_ok: bool) -> dict[str, str]:
    """What Campaign.clean reports for a simulated campaign: each field the simulator cannot honour."""
    try:
        placement(c, figures_ok=figures_ok)
    except SimulatedInputError as exc:
        return exc.errors
    return {}


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
    from schedulers.simulations import SimulationRequestError, read_summary

    from .report import write_simulated_report
    from .services import _enqueue, report_dir

    c = Campaign.objects.get(pk=campaign_id)
    if c.start_at and c.start_at > timezone.now() and c.state == Campaign.State.SCHEDULED:
        _enqueue(campaign_id, c.generation, eta=c.start_at)
        return "scheduled"
    if not Campaign.objects.filter(pk=campaign_id, state=Campaign.State.SCHEDULED).update(
        state=Campaign.State.RUNNING, started=timezone.now()
    ):
        return "not scheduled"  # a redelivered message: the first delivery owns the run
    out = report_dir(campaign_id)
    try:
        pinned, run, place = simulate(c, out)
    except (SimulatedInputError, SimulationRequestError, OSError) as exc:
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
        c.state, c.finished = Campaign.State.FINISHED, timezone.now()
        c.active_seconds = c.duration_seconds
        c.generated_bytes, c.products_created = summary["offered_bytes"], summary["products"]
        c.save()
    write_simulated_report(c)
    return "finished"
