"""Whether the flow-level simulator can honour a simulated campaign's inputs: the campaign mapped onto the
simulator's topology (``placement``), or the fields it cannot honour, each with its reason (what
``Campaign.clean`` reports, so a campaign that cannot run is refused at creation). Reads the campaign,
never imports its model (the model's validation calls this module)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from schedulers.planning.pinning import pinned_policy, pinned_topology
from schedulers.planning.policies import PolicyKind, validate_policy
from schedulers.planning.types import PlanInputError, Topology
from schedulers.planning.validate import validate_topology

from .workload import Workload

if TYPE_CHECKING:
    from schedulers.simulation.scenarios import Scenario

    from .models import Campaign

# The most products one simulated campaign may generate. Enough for a week of both telescopes at 1 PB/day in
# 50 GB products (about 280 000). A day of that took the simulator 21 s here when the network kept up, 90 s
# with a backlog; its time grows faster than the count.
MAX_SIMULATED_PRODUCTS = 300_000


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
