"""What tuning from measurements gives: the planner with its measurement history against physics alone.

The AIDTN seed reports 60 % faster completion from adjusting streams and concurrency to what paths
measurably deliver. Here the same question is asked of our model (docs/scheduler.md, "Streams and
concurrent files"): the simulated stack achieves only ``efficiency`` of the window/RTT ceiling per stream
(AENEAS measured disk-to-disk tools far below the socket's ceiling at long RTT), which the planner does
not know. Two runs of the same day, same workload, in the same process:

  physics   the planner never sees a measurement (k = 1): it opens the streams physics says suffice;
  measured  the planner reads the lanes' measurement history (the default) and opens more streams.

Efficiency 1.0 is the control: the history must change nothing there.

Run: .venv/bin/python bench/scheduler/bench_tuning.py [--days 0.5] [--efficiency 1.0,0.5,0.3]"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from schedulers.simulation.engine import SimConfig, simulate
from schedulers.simulation.metrics import Summary, summarise
from schedulers.simulation.reference import reference_topology
from schedulers.simulation.scenarios import CENTRE_EUR_PER_YEAR, scenarios
from schedulers.simulation.workload import daily_products


def run(days: float, efficiency: float, use_measurements: bool) -> tuple[Summary, float]:
    topology = reference_topology()
    products = daily_products(topology, days=days)
    scenario = scenarios()["one_replica"]
    config = SimConfig(duration_s=days * 86400, plan=scenario.plan, path_efficiency=efficiency)
    config = replace(config, use_measurements=use_measurements)
    start = time.perf_counter()
    result = simulate(topology, scenario.policy, products, config)
    wall = time.perf_counter() - start
    return summarise("one_replica", result, CENTRE_EUR_PER_YEAR), wall


def mean_utilisation(s: Summary) -> float:
    return sum(s.access_utilisation.values()) / len(s.access_utilisation)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--days", type=float, default=0.5)
    parser.add_argument("--efficiency", default="1.0,0.5,0.3", help="comma list of per-stream efficiencies")
    args = parser.parse_args()
    now = datetime.now(UTC)
    print(f"# {now:%Y-%m-%d %H:%M} UTC, load average {os.getloadavg()[0]:.1f}, days {args.days}")
    print(
        "| efficiency | model | access utilisation | latency p50 h | p90 h | p99 h "
        "| all replicas delivered | p50 physics / measured | wall s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for eff in (float(x) for x in args.efficiency.split(",")):
        physics, wall_p = run(args.days, eff, use_measurements=False)
        measured, wall_m = run(args.days, eff, use_measurements=True)
        speedup = physics.latency_hours["p50"] / measured.latency_hours["p50"]
        for name, s, wall in (("physics", physics, wall_p), ("measured", measured, wall_m)):
            lat = s.latency_hours
            util = 100 * mean_utilisation(s)
            print(
                f"| {eff:g} | {name} | {util:.2f} % | {lat['p50']:.2f} | {lat['p90']:.2f} | {lat['p99']:.2f} "
                f"| {s.completed} / {s.products} "
                f"| {speedup:.2f} | {wall:.1f} |"
            )
    print(f"# load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
