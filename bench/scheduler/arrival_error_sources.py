"""Where the error of the predicted arrival comes from, in a real run of bench_reality.py (issue 15).

The push loop predicts a product's arrival as its first copy is submitted: the bytes its lane still has to
copy up to it (the copies in flight, estimated; then its own) drained at the rate the lane delivered lately
(schedulers/arrivals.py). This replays that prediction on the run's own jobs (``real_jobs.json``, written
by bench_reality.py) and swaps in, one at a time, what the platform could not know then:

- ``as predicted``: the platform's figures (bytes in flight estimated from each active file's share of the
  lane's rate since it started; the lane's rate from its last 10 jobs);
- ``exact bytes``: the bytes really left in flight (each file's bytes spread evenly over its copy);
- ``the lane's real rate``: what the lane really delivered between the submission and the arrival;
- ``both``.

What is left with both is the order: products submitted after this one that shared the lane before it
arrived. Each figure is |error| over the product's wait (registered to arrival), median and p90, per SRC.

    .venv/bin/python bench/scheduler/arrival_error_sources.py bench/scheduler/results/reality-pace
"""

from __future__ import annotations

import argparse
import bisect
import json
import statistics
from pathlib import Path
from typing import Any

from reality_score import shown_over_time  # a sibling of this script

from srcnet.intervals import covered_seconds

RATE_JOBS = 10  # as schedulers/arrivals.py's lane_rates


def _sent(f: dict[str, Any], until: float) -> float:
    """Bytes of file ``f`` copied by ``until``, its bytes spread evenly over its copy."""
    start, end = f["start"], f["finish"]
    if start is None or end is None or end <= start:
        return 0.0
    return f["size"] * min(1.0, max(0.0, until - start) / (end - start))


def _sent_between(f: dict[str, Any], a: float, b: float) -> float:
    return _sent(f, b) - _sent(f, a)


def _lane_rate_lately(measurements: list[dict[str, Any]], lane: tuple[str, str], t: float) -> float:
    """bit/s: the bytes of the lane's last jobs before ``t`` over the union of their spans."""
    mine = [m for m in measurements if (m["source"], m["destination"]) == lane and m["created"] < t]
    mine = sorted(mine, key=lambda m: -m["created"])[:RATE_JOBS]
    busy = covered_seconds((m["created"] - m["seconds"], m["created"]) for m in mine)
    return sum(m["bytes"] for m in mine) * 8 / busy if busy > 0 else 0.0


def _estimated_left(f: dict[str, Any], t: float, rate: float, active: int) -> float:
    """The platform's estimate of a file's bytes left at ``t`` (no progress seen: its share since start)."""
    if f["finish"] is not None and f["finish"] <= t:
        return 0.0
    if f["start"] is None or f["start"] > t:
        return float(f["size"])
    return max(0.0, f["size"] - (t - f["start"]) * rate / 8 / max(1, active))


def _registered(jobs: list[dict[str, Any]], result: dict[str, Any]) -> None:
    """Each job's product's registration time, from the run's result (products matched in arrival order
    per SRC; the offsets must agree)."""
    t0s = []
    for each in result["real"]["arrival_prediction"]["products_each"]:
        each.setdefault("arrived_s", each["created_s"] + each["wait_s"])
    for site in {j["lane"][1] for j in jobs}:
        mine = sorted((j for j in jobs if j["lane"][1] == site), key=lambda j: j["finished"])
        each = result["real"]["arrival_prediction"]["products_each"]
        products = sorted(
            (p for p in each if p["destination"].startswith(site)), key=lambda p: p["arrived_s"]
        )
        for job, product in zip(mine, products, strict=False):
            t0s.append(job["finished"] - product["arrived_s"])
            job["created_s"] = product["created_s"]
    t0 = statistics.median(t0s)
    assert max(t0s) - min(t0s) < 1.0, "the jobs and the products do not match"
    for job in jobs:
        job["registered"] = t0 + job.get("created_s", job["created"] - t0)


def replay(run: Path) -> dict[str, dict[str, list[float]]]:
    timeline = json.loads((run / "real_jobs.json").read_text())
    result = json.loads((run / "result.json").read_text())
    jobs = [j for j in timeline["jobs"] if j["metadata"].get("lane") and j["finished"]]
    for job in jobs:
        job["lane"] = tuple(job["metadata"]["lane"])
        job["size"] = sum(f["size"] for f in job["files"])
    _registered(jobs, result)
    errors: dict[str, dict[str, list[float]]] = {}
    for job in jobs:
        t, arrived = job["created"], job["finished"]
        lane_jobs = [k for k in jobs if k["lane"] == job["lane"]]
        rate = _lane_rate_lately(timeline["measurements"], job["lane"], t)
        if rate <= 0:
            continue  # no measurement yet: the plan's own time stands (not replayed)
        ahead = [k for k in lane_jobs if k["created"] < t < k["finished"]]
        active = sum(
            1 for k in lane_jobs for f in k["files"] if f["start"] and f["start"] <= t < (f["finish"] or 1e20)
        )
        estimated = sum(_estimated_left(f, t, rate, active) for k in ahead for f in k["files"])
        exact = sum(f["size"] - _sent(f, t) for k in ahead for f in k["files"])
        delivered = sum(_sent_between(f, t, arrived) for k in lane_jobs for f in k["files"])
        real_rate = delivered * 8 / (arrived - t)
        wait = arrived - job["registered"]
        for name, left, bps in (
            ("as predicted", estimated, rate),
            ("exact bytes", exact, rate),
            ("the lane's real rate", estimated, real_rate),
            ("both", exact, real_rate),
        ):
            predicted = (left + job["size"]) * 8 / bps
            error = abs(arrived - t - predicted) / wait
            errors.setdefault(name, {}).setdefault(job["lane"][1], []).append(error)
    return errors


def shown_by_quarter(run: Path) -> list[list[float]]:
    """The arrival shown while each product waited (``real_samples.json``, one sample a second): |arrival -
    shown| over the product's wait, per quarter of its wait (from its first shown prediction)."""
    samples = json.loads((run / "real_samples.json").read_text())
    times = [sample["time"] for sample in samples]
    quarters: list[list[float]] = [[], [], [], []]
    for shown in shown_over_time(samples).values():
        after = bisect.bisect_right(times, shown[-1][0])  # the first sample without it
        if after >= len(times):
            continue  # still waiting when the run ended
        arrived = (times[after - 1] + times[after]) / 2
        first = shown[0][0]
        wait = arrived - first
        for at, predicted in shown:
            if wait > 0:
                quarters[min(3, int((at - first) / wait * 4))].append(abs(arrived - predicted) / wait)
    return quarters


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="bench_reality.py --out directories")
    args = parser.parse_args()
    merged: dict[str, dict[str, list[float]]] = {}
    for run in args.runs:
        if not (run / "real_jobs.json").exists():
            print(f"{run}: no real_jobs.json (a run from before it was written), not replayed")
            continue
        for name, per_site in replay(run).items():
            for site, values in per_site.items():
                merged.setdefault(name, {}).setdefault(site, []).extend(values)
    sites = sorted({site for per_site in merged.values() for site in per_site})
    print("| replayed with | all, p50 | all, p90 | " + " | ".join(f"{s}, p50" for s in sites) + " |")
    print("|---|---|---|" + "---|" * len(sites))
    for name, per_site in merged.items():
        every = sorted(v for values in per_site.values() for v in values)
        p90 = every[min(len(every) - 1, int(0.9 * len(every)))]
        cells = [f"{statistics.median(per_site[s]) * 100:.1f} %" for s in sites]
        row = [name, f"{statistics.median(every) * 100:.1f} %", f"{p90 * 100:.1f} %", *cells]
        print("| " + " | ".join(row) + " |")
    replayed = sum(len(values) for values in merged.get("as predicted", {}).values())
    print(f"\n{replayed} products with a measured lane at submission.")
    print("\n| run | the arrival shown, error over the wait, p50 in each quarter of the wait |\n|---|---|")
    for run in args.runs:
        if (run / "real_samples.json").exists():
            quarters = shown_by_quarter(run)
            if all(quarters):
                each = ", ".join(f"{statistics.median(q) * 100:.1f} %" for q in quarters)
                print(f"| {run.name} | {each} |")


if __name__ == "__main__":
    main()
