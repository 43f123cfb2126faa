"""What each lane's copies met and asked for in a bench_reality.py run (issue 17 item 7, docs/benchmarks.md,
"Dead time from copies never judged"), from the run's own ``real_samples.json`` and ``real_jobs.json``:

- the queue on the access link when each job's first copy started: the emulator's backlog sampled each
  second (bytes, shown as milliseconds at the link's capacity), the sample at or after the start;
- the copies in flight each job's lane asked for (``lane_files`` in the job's metadata), as a count of jobs;
- the copies running on average while the lane had one running.

    python3 bench/scheduler/copy_starts.py bench/scheduler/results/reality-judged-long [...]
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

CAPACITY_BPS = 100e6  # the scaled low-access link (localnet.longhaul, CAPACITY_SCALE)


def queue_ms_at_starts(samples: list[dict[str, Any]], jobs: list[dict[str, Any]], site: str) -> list[float]:
    """The access link's queue (ms) at each of ``site``'s jobs' first copy start."""
    times = [s["time"] for s in samples]
    found = []
    for job in jobs:
        starts = [f["start"] for f in job["files"] if f["start"]]
        if job["metadata"].get("lane", [None, None])[1] != site or not starts:
            continue
        index = bisect.bisect_left(times, min(starts))
        if index < len(samples) and samples[index].get("backlog") is not None:
            found.append(samples[index]["backlog"] * 8 / CAPACITY_BPS * 1000)
    return found


def copies_running(jobs: list[dict[str, Any]], site: str) -> float | None:
    """The mean number of ``site``'s copies running while at least one was."""
    spans = [
        (f["start"], f["finish"])
        for job in jobs
        if job["metadata"].get("lane", [None, None])[1] == site
        for f in job["files"]
        if f["start"] and f["finish"] and f["finish"] > f["start"]
    ]
    edges = sorted({t for span in spans for t in span})
    busy = weighted = 0.0
    for low, high in itertools.pairwise(edges):
        middle = (low + high) / 2
        running = sum(1 for start, end in spans if start <= middle < end)
        if running:
            busy += high - low
            weighted += running * (high - low)
    return weighted / busy if busy else None


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("runs", type=Path, nargs="+", help="bench_reality.py result folders")
    args = parser.parse_args()
    print(
        "| run | SRC | queue at a job's first copy start, p50 / mean | copies asked: jobs | copies running |"
    )
    print("|---|---|---|---|---|")
    for run in args.runs:
        samples = json.loads((run / "real_samples.json").read_text())
        jobs = json.loads((run / "real_jobs.json").read_text())["jobs"]
        sites = sorted({job["metadata"]["lane"][1] for job in jobs if job["metadata"].get("lane")})
        for site in sites:
            queue = queue_ms_at_starts(samples, jobs, site)
            asked = Counter(
                job["metadata"].get("lane_files")
                for job in jobs
                if job["metadata"].get("lane", [None, None])[1] == site
            )
            running = copies_running(jobs, site)
            queue_text = (
                f"{statistics.median(queue):.0f} / {statistics.fmean(queue):.0f} ms" if queue else "n/a"
            )
            asked_text = ", ".join(
                f"{n}: {count}" for n, count in sorted(asked.items(), key=lambda kv: kv[0] or 0)
            )
            running_text = f"{running:.2f}" if running is not None else "n/a"
            print(f"| {run.name} | {site} | {queue_text} | {asked_text} | {running_text} |")


if __name__ == "__main__":
    main()
