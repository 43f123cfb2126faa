"""``manage.py simulate``: run the push scenarios over the topology and write a report (tables, plots)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from schedulers.simulation.scenarios import scenarios
from schedulers.simulations import SimulationRequest, SimulationRequestError, run_simulation


class Command(BaseCommand):
    help = "Simulate pushing the telescopes' products under each replica scenario and write a report."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--scenario", default="all", help=f"all, or one of: {', '.join(scenarios())}")
        parser.add_argument("--days", type=float, default=1.0, help="simulated days (default 1)")
        parser.add_argument(
            "--out", required=True, type=Path, help="directory for report.md, summary.json, PNGs"
        )
        parser.add_argument(
            "--topology",
            choices=["db", "reference"],
            default="db",
            help="db: the stored topology (default); reference: topology/data/reference.yaml, no database",
        )
        parser.add_argument("--failures", action="store_true", help="inject the reference failure schedule")
        parser.add_argument("--no-lp", action="store_true", help="skip the LP upper bound")
        parser.add_argument("--seed", type=int, default=0, help="workload seed (default 0)")
        parser.add_argument(
            "--mean-size-gb", type=float, default=50.0, help="mean product size (default 50 GB)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        request = SimulationRequest(
            scenario=options["scenario"],
            days=options["days"],
            topology=options["topology"],
            failures=options["failures"],
            with_lp=not options["no_lp"],
            seed=options["seed"],
            mean_size_gb=options["mean_size_gb"],
        )
        try:
            written = run_simulation(request, options["out"], progress=self.stderr.write)
        except SimulationRequestError as exc:
            raise CommandError(str(exc)) from exc
        for path in written:
            self.stdout.write(str(path))
