"""What one push cycle costs against a queue of N products waiting at the telescopes' SDP storage.

    .venv/bin/python bench/scheduler/push_cycle.py --queues 1000,10000,100000 [--cycles 3]
        [--state bench-push-cycle] [--out FILE]

On a state of its own (``localnet``'s core services: its own PostgreSQL and Redis), with the reference
topology: for each queue size, products of one 1 GB file are registered at both telescopes' SDP storage
(by bulk insert, as ``register_product`` leaves them: REGISTERED, their SDP replica AVAILABLE), then the
push loop runs ``--cycles`` cycles as the beat runs them (``schedulers.loop.push_cycle``, the platform's own
transfer service as the transfertool: its jobs are written and their tasks queued in Redis; no worker runs
them, so after the first cycle the lanes are full and a cycle plans without submitting, as most cycles do).

Reported per queue size: each cycle's seconds (its own ``duration_seconds``) and what it planned and
submitted, and the cycles' median as a ratio to a baseline measured in the same run, on the same rows: one
SELECT of the queued products with their SDP replicas and files (the least any cycle must read). Ratios,
not seconds, are compared between runs and commits (these machines are shared and noisy):
``bench/scheduler/compare_revisions.py`` runs this script on two revisions in one session.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SCOPE = "bench"
GB = 10**9
TELESCOPES = ("SKA1-Low", "SKA1-Mid")


def populate(total: int, start: int) -> None:
    """Products ``start`` to ``total - 1`` registered at the telescopes' SDP storage, alternately."""
    from replicas.choices import ProductState, ReplicaState
    from replicas.models import DataProduct, ProductFile, Replica
    from topology.choices import StorageRole
    from topology.models import StorageEndpoint, Telescope

    sources = []
    for name in TELESCOPES:
        telescope = Telescope.objects.get(name=name)
        sdp = StorageEndpoint.objects.get(site=telescope, role=StorageRole.SDP, is_active=True)
        sources.append((telescope, sdp))
    batch = 5000
    for first in range(start, total, batch):
        indices = range(first, min(total, first + batch))
        rows = DataProduct.objects.bulk_create(
            DataProduct(
                scope=SCOPE,
                name=f"queued-{i:07d}",
                telescope=sources[i % 2][0],
                source=sources[i % 2][1],
                state=ProductState.REGISTERED,
            )
            for i in indices
        )
        ProductFile.objects.bulk_create(
            ProductFile(product=p, name="data.ms", size_bytes=GB, adler32="0cc737eb") for p in rows
        )
        # The bench's own rows, as register_product leaves them (the lifecycle makes them one by one).
        Replica.objects.bulk_create(
            Replica(product=p, endpoint_id=p.source_id, state=ReplicaState.AVAILABLE, reason="bench")
            for p in rows
        )


def baseline_select() -> float:
    """Seconds of one read of the queue: the registered products, their SDP replicas and files."""
    from django.db import connection

    sql = """
        SELECT p.id, p.priority, p.created, p.telescope_id, r.endpoint_id, f.size_bytes
        FROM replicas_dataproduct p
        JOIN replicas_replica r ON r.product_id = p.id AND r.endpoint_id = p.source_id
        JOIN replicas_productfile f ON f.product_id = p.id
        WHERE p.state = 'registered'
    """
    t0 = time.monotonic()
    with connection.cursor() as cursor:
        cursor.execute(sql)
        cursor.fetchall()
    return time.monotonic() - t0


def measure(queues: list[int], cycles: int) -> dict[str, Any]:
    """Each queue size's cycles (Django set up, the reference topology imported, no product yet)."""
    from django.db import connection

    from replicas.models import DataProduct
    from schedulers.loop import push_cycle

    out = []
    registered = 0
    for queue in sorted(queues):
        # Topped up to ``queue`` waiting products (the cycles before took some off the queue).
        missing = queue - DataProduct.objects.filter(state="registered").count()
        if missing > 0:
            populate(registered + missing, registered)
            registered += missing
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        baseline = min(baseline_select() for _ in range(3))
        runs = []
        for _ in range(cycles):
            cycle = push_cycle()
            runs.append(
                {
                    "seconds": round(cycle.duration_seconds or 0.0, 4),
                    "queued": cycle.products_queued,
                    "legs_planned": cycle.legs_planned,
                    "legs_submitted": cycle.legs_submitted,
                    "error": cycle.error,
                }
            )
        median = statistics.median(r["seconds"] for r in runs)
        out.append(
            {
                "queue": queue,
                "cycles": runs,
                "median_cycle_s": round(median, 4),
                "baseline_select_s": round(baseline, 4),
                "cycle_to_baseline": round(median / baseline, 1) if baseline else None,
            }
        )
    return {"queues": out}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--queues", default="1000,10000,100000", help="queue sizes, comma-separated")
    parser.add_argument("--cycles", type=int, default=3, help="cycles measured per queue size")
    parser.add_argument(
        "--state", default="bench-push-cycle", help="the state folder's name (its own services)"
    )
    parser.add_argument(
        "--out", type=Path, help="where to write the result (default bench/scheduler/results/)"
    )
    args = parser.parse_args()
    try:
        queues = [int(q) for q in args.queues.split(",")]
    except ValueError:
        parser.error("--queues: whole numbers separated by commas")
    if not queues or min(queues) < 1 or args.cycles < 1:
        parser.error("--queues and --cycles must be positive")
    sys.path.insert(0, str(ROOT / "bench"))
    from own_state import platform_on_own_state

    with platform_on_own_state(args.state):
        result = measure(queues, args.cycles)
    revision = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    result["revision"] = revision.stdout.strip()  # (uncommitted changes are not in it)
    result["machine"] = os.uname().nodename
    result["date"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    out = args.out or ROOT / "bench" / "scheduler" / "results" / f"push_cycle-{dt.date.today()}.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
