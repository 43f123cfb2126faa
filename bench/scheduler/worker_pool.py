"""How busy a Celery worker's processes were, from its own log (issue 17 item 7, docs/benchmarks.md,
"Copies waiting for a worker process").

Each task's "succeeded in N s" line says when it ended and how long it ran, so when it ran. Printed per
``--window`` seconds from the first copy: the mean number of processes running a copy
(``transfers.execute_attempt``) and running any task. A pool running as many tasks as it has processes
the whole time holds copies back in the broker.

    python3 bench/scheduler/worker_pool.py .state/bench-reality/log/bench-reality-worker.log [--window 50]
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

COPY_TASK = "transfers.execute_attempt"
SUCCEEDED = re.compile(
    r"\[(\d+-\d+-\d+ \d+:\d+:\d+,\d+): INFO/\S+\] Task (\S+)\[\S+\] succeeded in ([\d.]+)s"
)


class Run(NamedTuple):
    task: str
    start: float
    end: float


def runs(log: Path) -> list[Run]:
    """Every task run the log records as succeeded (epoch seconds)."""
    found = []
    with log.open(errors="replace") as fh:
        for line in fh:
            match = SUCCEEDED.search(line)
            if match:
                end = datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
                found.append(Run(match.group(2), end - float(match.group(3)), end))
    return found


def busy(found: list[Run], start: float, end: float) -> float:
    """The mean number of these runs in progress over [start, end)."""
    return sum(max(0.0, min(r.end, end) - max(r.start, start)) for r in found) / (end - start)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("log", type=Path, help="a Celery worker's log (INFO level)")
    parser.add_argument("--window", type=float, default=50.0, help="seconds per line (default 50)")
    args = parser.parse_args()
    if args.window <= 0:
        parser.error("--window must be positive")
    found = runs(args.log)
    copies = [r for r in found if r.task == COPY_TASK]
    if not copies:
        print(f"{args.log}: no {COPY_TASK} recorded", file=sys.stderr)
        return 1
    print("tasks:", ", ".join(f"{name} {n}" for name, n in Counter(r.task for r in found).most_common()))
    print("| from (s) | processes running a copy | running any task |")
    print("| --- | --- | --- |")
    first, last = min(r.start for r in copies), max(r.end for r in found)
    t = first
    while t < last:
        copying, any_task = busy(copies, t, t + args.window), busy(found, t, t + args.window)
        print(f"| {t - first:.0f} | {copying:.2f} | {any_task:.2f} |")
        t += args.window
    return 0


if __name__ == "__main__":
    sys.exit(main())
