#!/usr/bin/env python3
"""Summarises xrdcp-wan's per-read trace (`--trace CSV`): do the reads in flight ever run dry?

Each CSV row is one chunk read: offset, length, and when it was issued, received (last byte)
and handed to the disk writer, in seconds since the pull started. The source serves one
link's reads in order, so with enough bytes requested the chunks arrive back to back at the
path rate. This reports, for the steady phase (from the first chunk received to the last):

* the bytes requested and not yet received, over time (sampled every 10 ms), against the
  delay-bandwidth product: below it the source must run out of requests;
* gaps: a chunk arriving later than its predecessor plus its own time on the wire (x 1.5),
  split into *late requests* (the request left less than one RTT before the previous chunk
  ended, so the source had nothing to send) and the rest;
* the hand-off time (received -> handed to the writer), which delays the next request.

Usage: python3 bench/xrootd_plugin/tpc_trace.py trace.csv --rtt-ms 300 --rate-mbit 1000
"""

import argparse
import csv
import itertools
import json
import statistics
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Read:
    offset: int
    length: int
    issued: float
    received: float
    handed: float


def load(path):
    with open(path, newline="") as f:
        return [
            Read(
                int(r["offset"]),
                int(r["length"]),
                float(r["issued_s"]),
                float(r["received_s"]),
                float(r["handed_s"]),
            )
            for r in csv.DictReader(f)
        ]


def load_phases(csv_path):
    """The program's phase marks (seconds since it started) placed on the client's wall clock.

    Returns {"before_program_s", <phase>_s..., "after_program_s"} (a `<name>_total` entry is a
    duration, not a moment, e.g. writer_blocked_total_s) when the .phases and
    .client files written next to the trace by wan_bench.py --tpc-trace exist, else {}.
    """
    try:
        with open(f"{csv_path}.phases", newline="") as f:
            marks = {r["phase"]: float(r["seconds"]) for r in csv.DictReader(f)}
        with open(f"{csv_path}.client", newline="") as f:
            client = next(csv.DictReader(f))
    except FileNotFoundError:
        return {}
    program_start = marks.pop("start_unix_time")
    client_start, client_end = float(client["client_start_unix"]), float(client["client_end_unix"])
    out = {
        "client_s": round(client_end - client_start, 3),
        "before_program_s": round(program_start - client_start, 3),
    }
    out.update({f"{name}_s": round(seconds, 3) for name, seconds in marks.items()})
    if "end" in marks:
        out["after_program_s"] = round(client_end - (program_start + marks["end"]), 3)
    return out


def outstanding_bytes(reads, t):
    return sum(r.length for r in reads if r.issued <= t < r.received)


def summarise(reads, rtt_ms, rate_mbit, step=0.01):
    if not reads:
        return {"reads": 0}
    rate = rate_mbit * 1e6 / 8  # bytes per second
    rtt = rtt_ms / 1e3
    bdp = rate * rtt
    by_arrival = sorted(reads, key=lambda r: r.received)
    start, end = by_arrival[0].received, by_arrival[-1].received
    samples = []
    t = start
    while t < end:
        samples.append(outstanding_bytes(reads, t))
        t += step
    gaps = late = 0
    gap_seconds = late_seconds = 0.0
    for prev, cur in itertools.pairwise(by_arrival):
        wire = cur.length / rate
        spacing = cur.received - prev.received
        if spacing > 1.5 * wire:
            lost = spacing - wire
            gaps += 1
            gap_seconds += lost
            # The request reached the source (~RTT/2 after issue) only after the previous
            # chunk had left it (~RTT/2 before it arrived): the source sat idle.
            if cur.issued + rtt > prev.received:
                late += 1
                late_seconds += lost
    handoff = [r.handed - r.received for r in reads]
    return {
        "reads": len(reads),
        "first_byte_s": round(min(r.issued for r in reads), 3),
        "steady_s": round(end - start, 3),
        "steady_mbit_s": round(sum(r.length for r in by_arrival[1:]) * 8 / 1e6 / max(end - start, 1e-9), 1),
        "outstanding_median_mb": round(statistics.median(samples) / 1e6, 1) if samples else None,
        "time_below_bdp": round(sum(1 for s in samples if s < bdp) / len(samples), 3) if samples else None,
        "gaps": gaps,
        "gap_seconds": round(gap_seconds, 2),
        "late_request_gaps": late,
        "late_request_seconds": round(late_seconds, 2),
        "handoff_median_ms": round(statistics.median(handoff) * 1e3, 2),
        "handoff_max_ms": round(max(handoff) * 1e3, 1),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("--rtt-ms", type=float, required=True)
    ap.add_argument("--rate-mbit", type=float, required=True)
    args = ap.parse_args(argv)
    summary = summarise(load(args.csv), args.rtt_ms, args.rate_mbit)
    summary["phases"] = load_phases(args.csv)
    json.dump(summary, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
