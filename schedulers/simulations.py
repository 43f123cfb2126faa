"""Running the flow-level simulator for the command line and for the API (one code path for both)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .planning.types import PlanInputError
from .simulation.reference import reference_topology
from .simulation.report import run_scenario, write_report
from .simulation.scenarios import reference_failures, scenarios
from .simulation.workload import daily_products

MAX_DAYS = 7.0


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


def run_simulation(request: SimulationRequest, out: Path, *, progress: Any = None) -> list[Path]:
    """Simulate every scenario asked and write the report (report.md, summary.json, PNGs) into ``out``."""
    request.validate()
    if request.topology == "db":
        from .snapshot import topology_snapshot

        topology = topology_snapshot()
    else:
        topology = reference_topology()
    if not topology.telescopes:
        raise SimulationRequestError(
            "topology: no telescope with an access link (import one, or use reference)"
        )
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


def read_summary(out: Path) -> list[dict[str, Any]]:
    try:
        return list(json.loads((out / "summary.json").read_text()))
    except FileNotFoundError:
        return []
