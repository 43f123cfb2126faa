"""The fault-injection bench: real sites, a real worker with beat (the reaper and the dispatch sweep),
products pushed by the platform's push path, and the audit every fault test ends with.

- Sites of their own (``FAULT-*``), so killing one leaves the other tests' sites alone. The source is paced
  by the project's XRootD plugin (``wanio.net.pacing``) so a copy lasts seconds: long enough to strike it
  mid-way; the worker's copies run one stream (the pacing holds for the connection that opened the file).
  ``FAULT-FULL`` keeps its data on a small tmpfs.
- A worker of its own on a queue of its own (the session's worker never takes these tasks), running beat
  with short intervals: heartbeat 1 s, an attempt is lost after 8 s without one, unclaimed work is sent
  again after 6 s, the reaper runs every 2 s.
- The audit checks what the issue asks after every fault: no transfer stuck, every failure with a reason,
  no replica AVAILABLE unless its bytes at the destination have the product's adler32, no partial file left
  where a replica is not, no product lost; and it measures the time to recover."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from localnet.issuer import LocalIssuer, local_audience
from localnet.processes import is_alive, read_pid, stop_pid
from localnet.stack import platform_process, spawn_platform_process, wait_for_worker, worker_argv
from localnet.state import StateDir
from localnet.xrootd import LocalSite, stop_site
from tests.conftest import ARTIFACTS, token_site
from tests.integration.conftest import adler32_of, put_file, unique

MIB = 1024 * 1024
# 8 MB/s per connection from the source: a 24 MiB file takes about three seconds.
SOURCE_PACING = "8m"
FILE_BYTES = 24 * MIB
FULL_DISK = "40m"
SITES = ("FAULT-SDP", "FAULT-UK", "FAULT-AU", "FAULT-FULL")
# Reference endpoints -> the fault bench's sites.
BINDING = {
    "SKA1-LOW_SDP": "FAULT-SDP",
    "UKSRC_DISK": "FAULT-UK",
    "AUSRC_DISK": "FAULT-AU",
    "ZASRC_DISK": "FAULT-FULL",
}
WORKER_ENV = {
    "SRCNET_TRANSFER_HEARTBEAT": "1",
    "SRCNET_TRANSFER_LOST_AFTER": "8",
    "SRCNET_TRANSFER_UNCLAIMED_AFTER": "6",
    "SRCNET_REAP_INTERVAL": "2",
    # The push loop runs as deployed: a cycle when a push job ends and every 2 s; a lane carries one product
    # at a time, so the products a test pushes go out over the next cycles, faults or not.
    "SRCNET_PUSH_INTERVAL": "2",
    "SRCNET_PUSH_ON_SETTLE": "1",
    "SRCNET_OPTIMIZER_INTERVAL": "3600",
    # No storage consistency check takes a copy slot while a fault is timed (tests/consistency has its own).
    "SRCNET_CONSISTENCY_SCHEDULE_INTERVAL": "86400",
    # One TCP stream per copy, whatever the plan asks: the source paces the connection that opens a file, not
    # an XRootD pull's sub-streams (docs/transfers.md, "What runs on the wire"), and a copy must last seconds.
    "XRD_SUBSTREAMSPERCHANNEL": "1",
}
RESULTS = ARTIFACTS / "reliability.json"


def _mount_tmpfs(path: Path, size: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    if not os.path.ismount(path):
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path)], check=True
        )


def _unmount(path: Path) -> None:
    if os.path.ismount(path):
        subprocess.run(["umount", str(path)], check=False)


@pytest.fixture(scope="module")
def fault_sites(test_state: StateDir, token_issuer: LocalIssuer) -> Iterator[dict[str, LocalSite]]:
    full_data = test_state.path / "xrootd" / "FAULT-FULL" / "data"
    sites: dict[str, LocalSite] = {}
    try:
        _mount_tmpfs(full_data, FULL_DISK)
        for name in SITES:
            pacing = [f"wanio.net.pacing {SOURCE_PACING}"] if name == "FAULT-SDP" else []
            sites[name] = token_site(test_state, token_issuer, name, extra_lines=pacing)
        yield sites
    finally:
        for name in SITES:
            stop_site(test_state, name)
        _unmount(full_data)


class FaultWorker:
    """A Celery worker with beat on a queue of its own; killed and started again by the tests."""

    def __init__(self, state: StateDir, queue: str, extra_env: dict[str, str] | None = None) -> None:
        self.state, self.queue = state, queue
        self.env, self.account = platform_process(state, state.path.name)
        self.env.update(WORKER_ENV)
        self.env.update(
            {
                "SRCNET_DB_NAME": str(settings.DATABASES["default"]["NAME"]),
                "SRCNET_CELERY_QUEUE": queue,
                **(extra_env or {}),
            }
        )
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = state.sub("log") / f"pytest-fault-worker-{os.getpid()}.log"

    def start(self, **extra_env: str) -> None:
        # The worker's push loop plans on the network the test runs (the long-haul one is scaled down).
        env = {**self.env, "SRCNET_NETWORK_SCALE": f"{settings.SRCNET_NETWORK_SCALE:g}", **extra_env}
        argv = worker_argv(f"fault-{os.getpid()}-{time.monotonic_ns()}@%h", beat=True)
        with open(self.log, "ab") as out:
            out.write(f"\n==== started {time.strftime('%H:%M:%S')} {extra_env} ====\n".encode())
        self.proc = spawn_platform_process(argv, env, self.account, self.log, mode="ab")
        wait_for_worker(self.proc, self.log)

    def pids(self) -> list[int]:
        """The worker's main process and its pool processes."""
        if self.proc is None or not is_alive(self.proc.pid):
            return []
        try:
            with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as fh:
                children = [int(p) for p in fh.read().split()]
        except FileNotFoundError:
            children = []
        return [self.proc.pid, *children]

    def kill(self) -> None:
        """SIGKILL, the main process and its pool processes at once: a host that loses power."""
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait(timeout=10)

    def wait_dead(self, timeout: float = 60) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout=timeout)

    def took_the_work(self) -> list[str]:
        """The claimed attempts of this test whose task this worker never received (none, on a sound bench).
        Another worker on the test database with a dispatch sweep of its own takes the bench's copies
        first at times, and then the faults set in this worker never strike."""
        from transfers.models import TransferAttempt

        log = self.log.read_text(errors="replace")
        return [
            f"attempt {a.number} of {a.file_id} (task {a.task_id or '-'}, run by {a.worker})"
            for a in TransferAttempt.objects.filter(claimed__isnull=False)
            if not a.task_id or f"[{a.task_id}] received" not in log
        ]

    def stop(self) -> None:
        # The main process first: its warm shutdown stops its own pool. A pool process ignores SIGTERM
        # (billiard's children leave shutdown to their parent), so signalling the children first cost
        # 20 s each before SIGKILL.
        main, *children = self.pids() or [0]
        stop_pid(main, timeout=20)
        for pid in children:
            stop_pid(pid, timeout=5)
        if self.proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)


@pytest.fixture
def fault_queue() -> Iterator[str]:
    """This test's Celery queue: what the test submits goes to its own worker only."""
    from srcnet.celery import app

    queue = f"srcnet-fault-{os.getpid()}-{time.monotonic_ns()}"
    before = app.conf.task_default_queue
    app.conf.task_default_queue = queue
    try:
        yield queue
    finally:
        app.conf.task_default_queue = before


@pytest.fixture
def fault_worker(
    transactional_db, test_state: StateDir, fault_queue: str, token_issuer
) -> Iterator[FaultWorker]:  # type: ignore[no-untyped-def]
    worker = FaultWorker(test_state, fault_queue)
    try:
        yield worker
    finally:
        worker.stop()
    # The bench's premise, checked after every test: its copies were run by its own worker.
    elsewhere = worker.took_the_work()
    assert not elsewhere, f"copies run by another worker: {elsewhere}"


@pytest.fixture
def fault_net(transactional_db, reference_topology, fault_sites, settings):  # type: ignore[no-untyped-def]
    """The reference topology with four of its endpoints on the fault bench's sites; jobs submitted here
    retry after 3 s, then 6 s (a restarted server is back within that)."""
    from topology.models import StorageEndpoint

    settings.SRCNET_TRANSFERS = {**settings.SRCNET_TRANSFERS, "RETRY_BACKOFF_SECONDS": 3.0}

    for endpoint, site in BINDING.items():
        StorageEndpoint.objects.filter(name=endpoint).update(
            hostname="127.0.0.1",
            root_port=fault_sites[site].root_port,
            http_port=fault_sites[site].http_port,
            token_audience=local_audience(site),
        )
    return fault_sites


def policy_to(*destinations: str) -> Any:
    """SKA1-Low's products go to ``destinations`` (equal weights), through the root:// third-party copy the
    plugin's TPC program runs."""
    from tests.conftest import policy_of_shares
    from topology.models import StorageEndpoint

    StorageEndpoint.objects.filter(name__in=[*destinations, "SKA1-LOW_SDP"]).update(tpc_scheme="root")
    return policy_of_shares(dict.fromkeys(destinations, 1), name=f"faults-{unique('p')}")


def push_products(sites: dict[str, LocalSite], count: int, size: int = FILE_BYTES) -> list[Any]:
    """Write ``count`` one-file products at the SDP and push each through the platform's push path (the
    loop: what has no free lane now goes at a later cycle of the fault worker)."""
    from replicas.services import FileSpec, register_product
    from schedulers.services import push_product
    from topology.models import Telescope

    telescope = Telescope.objects.get(name="SKA1-Low")
    products = []
    for _ in range(count):
        name = unique("fault")
        file_name = f"{name}.ms"
        checksum = put_file(sites["FAULT-SDP"], f"ska/{name}/{file_name}", size)
        product = register_product(
            scope="ska", name=name, telescope=telescope, files=[FileSpec(file_name, size, checksum)]
        )
        push_product(product=product)
        products.append(product)
    return products


def active_copies() -> int:
    from transfers.choices import FileState
    from transfers.models import TransferFile

    return TransferFile.objects.filter(state=FileState.ACTIVE, attempt_rows__claimed__isnull=False).count()


def partial_at(site: LocalSite) -> list[Path]:
    """Files at ``site`` that are still being written (smaller than the products' size)."""
    root = site.local_path("srcnet/ska")
    if not root.exists():
        return []
    return [p for p in root.rglob("*.ms") if p.is_file() and p.stat().st_size < FILE_BYTES]


@dataclass
class FaultReport:
    """One row of docs/reliability.md."""

    fault: str
    products: int = 0
    in_flight: int = 0
    finished: int = 0
    failed_with_reason: int = 0
    failed_without_reason: int = 0
    stuck: int = 0
    corrupt_registered: int = 0
    partial_left: int = 0
    products_lost: int = 0
    recover_seconds: float = 0.0
    reasons: list[str] = field(default_factory=list)


def settle_and_audit(
    fault: str,
    products: list[Any],
    sites: dict[str, LocalSite],
    *,
    in_flight: int,
    since: float,
    timeout: float = 150,
    by_endpoint: bool = False,
) -> FaultReport:
    """Wait (bounded) until every product is PLACED or FAILED, then check every invariant; the report is
    appended to test-artifacts/reliability.json and returned for the test's assertions. ``sites`` are the
    fault bench's (BINDING says which endpoint is which), or with ``by_endpoint`` keyed by endpoint name."""
    from replicas.choices import ProductState, ReplicaState
    from transfers.choices import TERMINAL_FILE_STATES, FileState
    from transfers.models import TransferFile

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = [type(p).objects.get(pk=p.pk).state for p in products]
        if all(s in (ProductState.PLACED, ProductState.FAILED) for s in states):
            break
        time.sleep(0.5)
    report = FaultReport(fault=fault, products=len(products), in_flight=in_flight)
    report.recover_seconds = round(time.monotonic() - since, 1)
    endpoint_site = sites if by_endpoint else {endpoint: sites[site] for endpoint, site in BINDING.items()}
    dids = [p.did for p in products]
    rows = TransferFile.objects.filter(job__metadata__product__in=dids)
    for row in rows:
        if row.state not in TERMINAL_FILE_STATES:
            report.stuck += 1
        elif row.state == FileState.FINISHED:
            report.finished += 1
        elif row.reason:
            report.failed_with_reason += 1
            report.reasons.append(row.reason[:200])
        else:
            report.failed_without_reason += 1
    for product in products:
        product.refresh_from_db()
        if product.state not in (ProductState.PLACED, ProductState.FAILED):
            report.products_lost += 1
        for replica in product.replicas.exclude(endpoint__name="SKA1-LOW_SDP").select_related("endpoint"):
            site = endpoint_site[replica.endpoint.name]
            for f in product.files.all():
                on_disk = site.local_path(f"srcnet/{f.relative_path}")
                if replica.state == ReplicaState.AVAILABLE:
                    if not on_disk.exists() or adler32_of(on_disk) != f.adler32:
                        report.corrupt_registered += 1
                elif on_disk.exists():
                    report.partial_left += 1
    report.reasons = sorted(set(report.reasons))
    _append(report)
    return report


def _append(report: FaultReport) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    rows = json.loads(RESULTS.read_text()) if RESULTS.exists() else []
    rows = [r for r in rows if r["fault"] != report.fault] + [asdict(report)]
    RESULTS.write_text(json.dumps(rows, indent=2))


def assert_nothing_lost(report: FaultReport) -> None:
    assert report.stuck == 0, report
    assert report.failed_without_reason == 0, report
    assert report.corrupt_registered == 0, report
    assert report.partial_left == 0, report
    assert report.products_lost == 0, report
    assert report.finished + report.failed_with_reason >= report.products, report


def wait_for(predicate: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    pytest.fail(f"timed out after {timeout} s waiting for {what}")


def site_pid(state: StateDir, name: str) -> int:
    pid = read_pid(state, f"xrootd-{name}")
    assert pid and is_alive(pid)
    return pid
