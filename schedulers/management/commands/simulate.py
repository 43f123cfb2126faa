"""``manage.py simulate``: run the push scenarios over the topology and write a report (tables, plots)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from schedulers.planning.types import PlanInputError
from schedulers.simulation.reference import reference_topology
from schedulers.simulation.report import run_scenario, write_report
from schedulers.simulation.scenarios import reference_failures, scenarios
from schedulers.simulation.workload import daily_products
from schedulers.snapshot import topology_snapshot


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
        known = scenarios()
        wanted = list(known) if options["scenario"] == "all" else [options["scenario"]]
        for name in wanted:
            if name not in known:
                raise CommandError(f"unknown scenario {name!r}; choose all or one of {', '.join(known)}")
        if options["days"] <= 0:
            raise CommandError("--days must be positive")
        topology = topology_snapshot() if options["topology"] == "db" else reference_topology()
        if not topology.telescopes:
            raise CommandError(
                "the topology has no telescope with an access link (import one, or --topology reference)"
            )
        duration = options["days"] * 86400
        products = daily_products(
            topology,
            days=options["days"],
            mean_size_bytes=options["mean_size_gb"] * 1e9,
            seed=options["seed"],
        )
        changes = reference_failures() if options["failures"] else ()
        runs = []
        for name in wanted:
            self.stderr.write(f"simulating {name} ({len(products)} products, {options['days']:g} day(s))")
            try:
                runs.append(
                    run_scenario(
                        known[name],
                        topology,
                        products,
                        duration_s=duration,
                        changes=changes,
                        with_lp=not options["no_lp"],
                    )
                )
            except PlanInputError as exc:
                raise CommandError(f"{name}: {exc}") from exc
        for path in write_report(runs, duration, options["out"]):
            self.stdout.write(str(path))
