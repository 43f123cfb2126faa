"""The control plane end to end at a file rate: products registered at the telescopes' SDP storage, planned by
the push loop, submitted to the platform's transfer service, copied by Celery workers, checksum-verified,
recorded, their replicas AVAILABLE. Copies move no bytes: every storage endpoint is of the mock kind
(gfal2's mock plugin, transfers/mock_storage.py), which only a platform with SRCNET_MOCK_STORAGE on accepts.

    .venv/bin/python bench/control_plane/end_to_end.py --products 200 --files 50 [--copy-slots 8]
        [--failure-fraction 0.01] [--push-interval 2] [--timeout 900] [--state bench-control-plane]
        [--out FILE]

Everything else is the platform as deployed, on a state of its own (``localnet``'s PostgreSQL and Redis):
one Celery worker with its beat (the push loop every ``--push-interval`` seconds and at each job's end, the
dispatch sweep, the reaper), the planner, the transfer service, the lifecycle. The products are registered
at once, as a backlog (``register_product``, what the API's registration runs), and the run ends when every
destination copy is AVAILABLE or FAILED, or at ``--timeout``. Reported: the files accounted for (none stuck,
none twice), files per second from the first registration to the last copy settled and in the best 10 s,
registration-to-AVAILABLE p50/p99, each stage's share of a file's time and the worker's seconds by task per
file (bench/control_plane/figures.py).
The baseline, measured in the same run on the same platform: the transfer service's own acceptance, files
per second of one job of ``--files`` files submitted through the service (no copy runs), so that runs on
other machines compare as ratios.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SCOPE = "e2e"
FILE_BYTES = 150 * 10**6  # SRCNet's average file (its best day: 150 TB in about 1 million files)
ADLER32 = "0cc737eb"
BASELINE_FILES = 1000  # one job of this many files: the acceptance baseline


def register_backlog(products: int, files: int, scope: str = SCOPE) -> float:
    """``products`` products of ``files`` files each at the telescopes' SDP storage, alternately, through the
    registration service; returns its seconds."""
    from replicas.services import FileSpec, register_product
    from topology.models import Telescope

    telescopes = list(Telescope.objects.order_by("name"))
    specs = [FileSpec(f"part{i:04d}.ms", FILE_BYTES, ADLER32) for i in range(files)]
    t0 = time.monotonic()
    for number in range(products):
        register_product(scope=scope, name=f"obs-{number:06d}", telescope=telescopes[number % 2], files=specs)
    return time.monotonic() - t0


def acceptance_baseline(files: int) -> float:
    """Files per second the transfer service accepts in one job of ``files`` files between two mock
    endpoints (checked against the registry, stored, its dispatch queued; cancelled before any copy)."""
    from topology.models import StorageEndpoint
    from transfers.services import FileRequest, cancel_job, submit_job

    source, destination = StorageEndpoint.objects.order_by("name")[:2]
    requests = [
        FileRequest(
            source=source.tpc_url(f"baseline/f{i}"),
            destination=destination.tpc_url(f"baseline/f{i}"),
            filesize=FILE_BYTES,
            checksum=f"ADLER32:{ADLER32}",
        )
        for i in range(files)
    ]
    t0 = time.monotonic()
    job = submit_job(files=requests, activity="bench-baseline")
    seconds = time.monotonic() - t0
    cancel_job(job)
    return files / seconds


def mock_storage_everywhere() -> int:
    """Every storage endpoint of the topology served by gfal2's mock plugin (this platform allows it)."""
    from topology.models import StorageEndpoint

    return StorageEndpoint.objects.update(tpc_scheme="mock")


def start_worker(
    state: Any, name: str, copy_slots: int, push_interval: float, failure_fraction: float, session_files: int
) -> Any:
    from localnet.stack import platform_process, spawn_platform_process, wait_for_worker, worker_argv
    from srcnet.workers import worker_concurrency

    env, account = platform_process(state, name)
    env.update(
        {
            "SRCNET_MOCK_STORAGE": "1",
            "SRCNET_MOCK_FAILURE_FRACTION": str(failure_fraction),
            "SRCNET_COPY_SLOTS": str(copy_slots),
            "SRCNET_PUSH_INTERVAL": str(push_interval),
            "SRCNET_TRANSFER_SESSION_FILES": str(session_files),
        }
    )
    log = state.sub("log") / "bench-control-plane-worker.log"
    argv = worker_argv(f"bench-e2e-{os.getpid()}@%h", concurrency=worker_concurrency(copy_slots), beat=True)
    proc = spawn_platform_process(argv, env, account, log)
    wait_for_worker(proc, log)
    return proc, log


def wait_until_accounted(
    timeout: float, scope: str = SCOPE, available_seen: dict[int, dt.datetime] | None = None
) -> bool:
    """True once no product of the run waits or moves (every destination copy AVAILABLE or FAILED).
    ``available_seen``: filled with when each destination replica was first seen AVAILABLE (each second)."""
    from django.db.models import F
    from django.utils import timezone

    from replicas.models import DataProduct, Replica

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        # Looked at first: a replica that turns AVAILABLE after the look is seen below, not lost.
        done = not DataProduct.objects.filter(scope=scope, state__in=("registered", "placing")).exists()
        if available_seen is not None:
            now = timezone.now()
            for replica_id in (
                Replica.objects.filter(product__scope=scope, state="available")
                .exclude(endpoint_id=F("product__source_id"))
                .exclude(pk__in=list(available_seen))
                .values_list("pk", flat=True)
            ):
                available_seen[replica_id] = now
        if done:
            return True
        time.sleep(1.0)
    return False


def run(args: argparse.Namespace) -> dict[str, Any]:
    """One run on the state named ``args.state`` (Django set up on it, the reference topology imported)."""
    from django.utils import timezone

    sys.path.insert(0, str(ROOT / "bench" / "control_plane"))
    import cpu
    import through_rucio
    from figures import accounted, timeline, worker_time

    from localnet.processes import stop_pid
    from localnet.state import StateDir

    rucio = args.through == "rucio"
    scope = through_rucio.run_scope(timezone.now()) if rucio else SCOPE
    mock_storage_everywhere()
    baseline = acceptance_baseline(BASELINE_FILES)
    state = StateDir.named(args.state)
    if rucio:
        # Before the worker: it follows Rucio's rules.
        through_rucio.prepare(state, args.state, pooled=args.rucio_connections == "pooled")
    proc, log = start_worker(
        state, args.state, args.copy_slots, args.push_interval, args.failure_fraction, args.session_files
    )
    # Through Rucio, a copy's end is when its replica is seen AVAILABLE (the service's own rows say it else).
    available_seen: dict[int, dt.datetime] | None = {} if rucio else None
    try:
        pids = cpu.component_pids(proc.pid)
        if rucio:
            pids.update(through_rucio.component_pids(state))
        cpu_before = cpu.snapshot(pids)
        started = timezone.now()
        registration_s = register_backlog(args.products, args.files, scope)
        finished = wait_until_accounted(args.timeout, scope, available_seen)
        cpu_after = cpu.snapshot(pids)
    finally:
        stop_pid(proc.pid, timeout=30)
    figures = (
        through_rucio.timeline(scope, started, available_seen)
        if available_seen is not None
        else timeline(scope, started)
    )
    rate = figures.get("files_per_second", 0.0)
    return {
        "through": args.through,
        "rucio_connections": args.rucio_connections if rucio else None,
        "products": args.products,
        "files_per_product": args.files,
        "copy_slots": args.copy_slots,
        "session_files": args.session_files,
        "failure_fraction": args.failure_fraction,
        "push_interval_s": args.push_interval,
        "registration_s": round(registration_s, 2),
        "all_accounted": finished,
        "accounted": accounted(scope),
        **figures,
        "worker_time": worker_time(log, figures.get("files_finished", 0)),
        # CPU ms per file made AVAILABLE, by component (the bench: registering the backlog, and waiting).
        "cpu_ms_per_file": cpu.per_file(cpu_before, cpu_after, figures.get("files_finished", 0)),
        "baseline_acceptance_files_per_second": round(baseline, 1),
        "rate_to_baseline": round(rate / baseline, 4) if baseline else None,
        "worker_log": str(log),
    }


def add_workload_arguments(parser: argparse.ArgumentParser) -> None:
    """The run's options this benchmark and bench/control_plane/on_hosts.py share."""
    parser.add_argument("--products", type=int, default=200, help="products registered at once")
    parser.add_argument("--files", type=int, default=50, help="files per product")
    parser.add_argument(
        "--session-files",
        type=int,
        default=50,
        help="files a copy session may carry (1: none; the default's)",
    )
    parser.add_argument("--failure-fraction", type=float, default=0.01, help="share of copies that fail")
    parser.add_argument("--push-interval", type=float, default=2.0, help="seconds between push cycles")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds to wait for every copy")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_workload_arguments(parser)
    parser.add_argument("--copy-slots", type=int, default=8, help="copies a worker runs at once")
    parser.add_argument(
        "--through",
        choices=("service", "rucio"),
        default="service",
        help="who submits the copies: the push loop to the transfer service (default), or Rucio's conveyor"
        " (rules the push loop makes, through the FTS3 endpoint)",
    )
    parser.add_argument(
        "--rucio-connections",
        choices=("pooled", "per-session"),
        default="pooled",
        help="through Rucio: its database connections pooled (default), or one per session (the tests')",
    )
    parser.add_argument("--state", default="bench-control-plane", help="the state folder's name")
    parser.add_argument("--out", type=Path, help="the result file (default bench/control_plane/results/)")
    args = parser.parse_args()
    if min(args.products, args.files, args.copy_slots) < 1 or args.timeout <= 0 or args.push_interval <= 0:
        parser.error("--products, --files, --copy-slots, --timeout and --push-interval must be positive")
    if not 0 <= args.failure_fraction < 1:
        parser.error("--failure-fraction must be at least 0 and below 1")
    os.environ["SRCNET_MOCK_STORAGE"] = "1"  # this process registers the mock endpoints
    sys.path.insert(0, str(ROOT / "bench"))
    from own_state import platform_on_own_state

    with platform_on_own_state(args.state):
        result = run(args)
    result["machine"] = os.uname().nodename
    result["date"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    out = args.out or ROOT / "bench" / "control_plane" / "results" / f"end_to_end-{dt.date.today()}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    return 0 if result["all_accounted"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
