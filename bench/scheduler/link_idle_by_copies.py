"""How busy the access link was, second by second, against the copies each lane had in flight then, in
real runs of bench_reality.py (issue 17 item 7: where the link idles while both SRCs' products wait).

For each second in which both SRCs had products undelivered (``real_samples.json``: the emulator's
``low-access>Perth`` byte counter and the products waiting per SRC), the link's use is the bytes that
crossed it over its scaled capacity; the copies in flight are the files of ``real_jobs.json`` between their
start and their finish at the middle of that second. Prints, per run, the mean use for each number of
copies a lane had, and the packets the emulator's queue dropped in that phase.

    .venv/bin/python bench/scheduler/link_idle_by_copies.py bench/scheduler/results/reality-looks-5s
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
from collections import defaultdict
from pathlib import Path

CAPACITY_BYTES_PER_S = 100e6 / 8  # the scaled low-access link (localnet.longhaul, CAPACITY_SCALE)
LANES = {"UKSRC": "223 ms", "AUSRC": "7.5 ms"}


def both_waiting_seconds(run: Path) -> list[tuple[float, dict[str, int], int]]:
    """(link use, copies in flight per lane, packets dropped) for each second both SRCs waited."""
    samples = json.loads((run / "real_samples.json").read_text())
    jobs = json.loads((run / "real_jobs.json").read_text())["jobs"]
    files = [
        (job["metadata"]["lane"][1], f["start"], f["finish"])
        for job in jobs
        for f in job["files"]
        if f["start"] and f["finish"]
    ]
    out = []
    for a, b in itertools.pairwise(samples):
        if not (a["UKSRC_DISK"] and a["AUSRC_DISK"]):
            continue
        use = (b["tx_bytes"] - a["tx_bytes"]) / (b["time"] - a["time"]) / CAPACITY_BYTES_PER_S
        mid = (a["time"] + b["time"]) / 2
        copies = {lane: sum(1 for x, t0, t1 in files if x == lane and t0 <= mid < t1) for lane in LANES}
        out.append((use, copies, b["drop_queue"] - a["drop_queue"]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("runs", type=Path, nargs="+", help="bench_reality.py result folders")
    for run in parser.parse_args().runs:
        seconds = both_waiting_seconds(run)
        if not seconds:
            print(f"{run.name}: no second with both SRCs waiting")
            continue
        mean = statistics.mean(use for use, _, _ in seconds)
        dropped = sum(d for _, _, d in seconds)
        print(f"{run.name}: {len(seconds)} s with both SRCs waiting, link {mean:.1%} busy, {dropped} dropped")
        for lane, rtt in LANES.items():
            by_copies: dict[int, list[float]] = defaultdict(list)
            for use, copies, _ in seconds:
                by_copies[copies[lane]].append(use)
            cells = ", ".join(
                f"{n}: {statistics.mean(v):.1%} ({len(v)} s)" for n, v in sorted(by_copies.items())
            )
            print(f"  {rtt} lane's copies in flight -> link busy: {cells}")


if __name__ == "__main__":
    main()
