"""Running the flow-level simulator for the command line and for the API (one code path for both)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from .planning.types import PlanInputError, Product, Topology
from .simulation.measured import measured_stack
from .simulation.reference import reference_endpoints, reference_topology
from .simulation.report import ScenarioRun, run_scenario, write_report
from .simulation.scenarios import Scenario, reference_failures, scenarios
from .simulation.workload import daily_products

MAX_DAYS = 7.0
MTU_RANGE = (576, 65535)  # IPv4's smallest datagram every host must take, and its largest


def deployed_stack() -> dict[str, float | bool]:
    """How the deployment's stack moves a copy (``simulation.measured``) on its sites' network: their
    congestion control (SRCNET_SITES_CONGESTION_CONTROL) and the paths' MTU (SRCNET_NETWORK_MTU); a bad
    value is an ImproperlyConfigured naming the setting."""
    control = str(settings.SRCNET_SITES_CONGESTION_CONTROL)
    try:
        stack = measured_stack(control)
    except ValueError as exc:
        raise ImproperlyConfigured(f"SRCNET_SITES_CONGESTION_CONTROL: {exc}") from None
    text = str(settings.SRCNET_NETWORK_MTU)
    low, high = MTU_RANGE
    if not (text.isdigit() and low <= int(text) <= high):
        raise ImproperlyConfigured(f"SRCNET_NETWORK_MTU: {text!r} is not a number of bytes in {low}..{high}")
    return {**stack, "mtu_bytes": int(text)}


class SimulationRequestError(ValueError):
    """A simulation cannot be run as asked; the message names the field."""


@dataclass(frozen=True)
class SimulationRequest:
    scenario: str = "all"
    days: float = 1.0
    topology: str = "db"  # the stored topology, or "reference" (the file, no database)
    failures: bool = False
    with_lp: bool = True
    seed: int = 0
    mean_size_gb: float = 50.0

    def scenario_names(self) -> list[str]:
        known = scenarios()
        wanted = list(known) if self.scenario == "all" else [self.scenario]
        for name in wanted:
            if name not in known:
                raise SimulationRequestError(
                    f"scenario: unknown {name!r}; choose all or one of {', '.join(known)}"
                )
        return wanted

    def validate(self) -> None:
        self.scenario_names()
        if not 0 < self.days <= MAX_DAYS:
            raise SimulationRequestError(f"days: must be more than 0 and at most {MAX_DAYS:g}")
        if self.topology not in ("db", "reference"):
            raise SimulationRequestError("topology: db or reference")
        if not 0 < self.mean_size_gb <= 10_000:
            raise SimulationRequestError("mean_size_gb: must be more than 0 and at most 10000")


def load_topology(name: str) -> Topology:
    """The planner's topology: the stored one (``db``) or the reference file (``reference``)."""
    if name == "db":
        from .snapshot import topology_snapshot

        topology = topology_snapshot()
    elif name == "reference":
        topology = reference_topology()
    else:
        raise SimulationRequestError("topology: db or reference")
    if not topology.telescopes:
        raise SimulationRequestError(
            "topology: no telescope with an access link (import one, or use reference)"
        )
    return topology


def endpoint_sites(name: str) -> dict[str, tuple[str, str]]:
    """Storage endpoint name -> (its site, its role) in the topology ``name`` (db or reference)."""
    if name == "reference":
        return reference_endpoints()
    from topology.models import StorageEndpoint

    rows = StorageEndpoint.objects.values_list("name", "site__name", "role")
    return {endpoint: (site, role) for endpoint, site, role in rows}


def run_simulation(request: SimulationRequest, out: Path, *, progress: Any = None) -> list[Path]:
    """Simulate every scenario asked and write the report (report.md, summary.json, PNGs) into ``out``."""
    request.validate()
    topology = load_topology(request.topology)
    duration = request.days * 86400
    products = daily_products(
        topology, days=request.days, mean_size_bytes=request.mean_size_gb * 1e9, seed=request.seed
    )
    changes = reference_failures() if request.failures else ()
    known = scenarios()
    runs = []
    for name in request.scenario_names():
        if progress:
            progress(f"simulating {name} ({len(products)} products, {request.days:g} day(s))")
        try:
            runs.append(
                run_scenario(
                    known[name],
                    topology,
                    products,
                    duration_s=duration,
                    changes=changes,
                    with_lp=request.with_lp,
                )
            )
        except PlanInputError as exc:
            raise SimulationRequestError(f"{name}: {exc}") from exc
    return write_report(runs, duration, out)


MAX_CAMPAIGN_PLANS = 500


def simulate_workload(
    scenario: Scenario,
    topology: Topology,
    products: Sequence[Product],
    *,
    until_s: float,
    bin_s: float,
    out: Path,
    seed: int = 0,
) -> ScenarioRun:
    """One scenario over a given workload (a campaign's products, each pinned to its destination) for
    ``until_s`` simulated seconds, in bins of ``bin_s``; writes the simulator's report into ``out`` and
    returns the run with its result, for the caller's own figures. The workload runs as the platform's
    stack moves it on the deployment's network (``deployed_stack``: unpaced cold copies, the plan's copies in
    flight, the sites' congestion control, the MTU), so that a simulated campaign predicts what a real one
    does (checked by bench/scheduler/bench_reality.py); ``seed`` seeds the copies' draws (SimConfig.seed:
    the same seed, the same run)."""
    # Replanned as often as the deployed push loop (its beat), up to MAX_CAMPAIGN_PLANS plans per run: a
    # plan every 600 s (the simulator's default) cannot follow a lane's measured copy dead time within a
    # campaign of minutes (bench_reality: the 223 ms lane stayed at 2-3 copies where the loop went to 4).
    replan_s = max(settings.SRCNET_PUSH_INTERVAL, until_s / MAX_CAMPAIGN_PLANS)
    try:
        run = run_scenario(
            scenario,
            topology,
            products,
            duration_s=until_s,
            with_lp=False,
            bin_s=bin_s,
            model={**deployed_stack(), "replan_s": replan_s, "seed": seed},
        )
    except PlanInputError as exc:
        raise SimulationRequestError(f"{scenario.name}: {exc}") from exc
    write_report([run], until_s, out)
    return run


def read_summary(out: Path) -> list[dict[str, Any]]:
    try:
        return list(json.loads((out / "summary.json").read_text()))
    except FileNotFoundError:
        return []
