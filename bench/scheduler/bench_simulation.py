"""Simulation speed and memory: one full SKA day, both telescopes at 1 PB/day, every SRC, one scenario.

Run: .venv/bin/python bench/scheduler/bench_simulation.py --scenario one_replica [--days 1] [--failures]
Each scenario runs in its own process so the peak RSS printed is that scenario's alone."""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from schedulers.simulation.engine import SimConfig, simulate
from schedulers.simulation.metrics import summarise
from schedulers.simulation.reference import reference_topology
from schedulers.simulation.scenarios import CENTRE_EUR_PER_YEAR, reference_failures, scenarios
from schedulers.simulation.workload import daily_products


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scenario", default="one_replica", choices=sorted(scenarios()))
    parser.add_argument("--days", type=float, default=1.0)
    parser.add_argument("--failures", action="store_true")
    args = parser.parse_args()
    topology = reference_topology()
    products = daily_products(topology, days=args.days)
    scenario = scenarios()[args.scenario]
    config = SimConfig(
        duration_s=args.days * 86400,
        plan=scenario.plan,
        changes=reference_failures() if args.failures else (),
    )
    start = time.perf_counter()
    result = simulate(topology, scenario.policy, products, config)
    wall = time.perf_counter() - start
    s = summarise(args.scenario, result, CENTRE_EUR_PER_YEAR)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    util = " ".join(f"{t}={100 * u:.2f}%" for t, u in s.access_utilisation.items())
    print(
        f"{args.scenario}{' +failures' if args.failures else ''} | products {len(products)} | "
        f"simulated {config.duration_s:.0f} s | wall {wall:.1f} s | "
        f"{config.duration_s / wall:,.0f} x real time | "
        f"plans {result.plans} | events {result.sim_events} | peak RSS {rss_mb:.0f} MB | {util} | "
        f"misses {s.deadline_misses} | all replicas {s.completed}/{s.products}"
    )


if __name__ == "__main__":
    main()
