"""Planning time: a horizon of N products over the reference topology, and over synthetic stars of S SRCs.

Run: .venv/bin/python bench/scheduler/bench_planner.py [--repeat 3] [--scale 1.0]
Prints one line per case: products, SRCs, policy, mode, best-of-repeat seconds, products per second.
``--scale`` multiplies every case's products (its smoke run in make test: 0.01)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from schedulers.planning import (
    LinkSpec,
    PathSpec,
    PlanConfig,
    PlanMode,
    Product,
    ReplicaPolicy,
    SiteSpec,
    TelescopeSpec,
    Topology,
    plan,
)
from schedulers.simulation.reference import reference_topology
from schedulers.simulation.scenarios import scenarios


def products_for(topology: Topology, n: int) -> list[Product]:
    """n products of 20 GB spread over both telescopes, arriving at 1 PB/day each (100 000 = one day)."""
    tels = sorted(t.name for t in topology.telescopes)
    gap = 86400 / (n / len(tels))
    return [
        Product(f"p{i:07d}", tels[i % len(tels)], 20e9, (i // len(tels)) * gap, files=8) for i in range(n)
    ]


def star(srcs: int) -> Topology:
    """Two telescopes and ``srcs`` SRCs around one exchange; 100 Gbit/s links, 150 ms paths."""
    names = [f"S{i:03d}" for i in range(srcs)]
    ends = ["T1", "T2", *names]
    links = tuple(LinkSpec(f"x-{e}", 100e9, 75.0, 0.0, 15000.0, e, "X") for e in ends)
    sites = tuple(SiteSpec(n, 1.0 + (i % 3), 20e9, 70e9) for i, n in enumerate(names))
    paths = tuple(PathSpec(a, b, (f"x-{a}", f"x-{b}")) for a in ["T1", "T2", *names] for b in names if a != b)
    tels = (TelescopeSpec("T1", "x-T1"), TelescopeSpec("T2", "x-T2"))
    return Topology(tels, sites, links, paths)


def best_of(repeat: int, fn) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scale", type=float, default=1.0, help="every case's products times this")
    args = parser.parse_args()
    if args.repeat < 1 or not 0 < args.scale <= 10:
        parser.error("--repeat is at least 1, --scale above 0 and at most 10")

    def scaled(n: int) -> int:
        return max(10, round(n * args.scale))

    ref = reference_topology()
    day = scaled(100_000)
    print("case | products | SRCs | policy | mode | seconds | products/s")
    for n in (scaled(10_000), scaled(25_000), scaled(50_000), day):
        products = products_for(ref, n)
        s = best_of(args.repeat, lambda p=products: plan(p, ref, ReplicaPolicy()))
        print(f"reference | {n} | 14 | one_replica | parallel | {s:.2f} | {n / s:,.0f}")
    products = products_for(ref, day)
    for name, sc in scenarios().items():
        s = best_of(1, lambda sc=sc: plan(products, ref, sc.policy, config=sc.plan))
        print(
            f"reference | {day} | 14 | {sc.policy.kind.value} | {sc.plan.mode.value} | {s:.2f} "
            f"| {day / s:,.0f}  ({name})"
        )
    for srcs in (7, 14, 28, 56, 112):
        topo = star(srcs)
        products = products_for(topo, day)
        s = best_of(1, lambda t=topo, p=products: plan(p, t, ReplicaPolicy()))
        print(f"star | {day} | {srcs} | one_replica | parallel | {s:.2f} | {day / s:,.0f}")
    slot = PlanConfig(mode=PlanMode.SLOT, slot_seconds=600)
    s = best_of(1, lambda: plan(products_for(ref, day), ref, ReplicaPolicy(), config=slot))
    print(f"reference | {day} | 14 | one_replica | slot | {s:.2f} | {day / s:,.0f}")


if __name__ == "__main__":
    main()
