"""The real run's stack for bench_reality.py: its state folder, the Celery worker that runs the push loop
as deployed, the database it starts from, and what the bench reads and deletes while the campaign runs."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from reality_report import AU, SDP, UK

STATE = "bench-reality"
ENDPOINTS = (SDP, UK, AU)
TELESCOPE = "SKA1-Low"
MIB = 1024 * 1024
WORKER_ENV = {"SRCNET_PUSH_INTERVAL": "2", "SRCNET_PUSH_ON_SETTLE": "1"}


class Worker:
    """One Celery worker with beat, the push loop as deployed; stopped by PID (its pool first)."""

    def __init__(self, state: Any, log: Path) -> None:
        from localnet.stack import platform_process

        self.env, self.account = platform_process(state, STATE)
        self.env.update(WORKER_ENV)
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        from localnet.stack import spawn_platform_process, wait_for_worker, worker_argv

        argv = worker_argv(f"bench-reality-{os.getpid()}@%h", beat=True)
        self.proc = spawn_platform_process(argv, self.env, self.account, self.log)
        wait_for_worker(self.proc, self.log, timeout=90)

    def stop(self) -> None:
        from localnet.processes import stop_pid

        if self.proc is None:
            return
        try:
            with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as fh:
                children = [int(p) for p in fh.read().split()]
        except FileNotFoundError:
            children = []
        for pid in [*children, self.proc.pid]:
            stop_pid(pid, timeout=20)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)


def prepare_database(state: Any, src_budget_bps: float | None) -> Any:
    """The reference topology in this state's own database. ``src_budget_bps``: the two SRCs' per-telescope
    budget and peak (unscaled), so that the plan may fill the access link with them: with the reference
    budgets (20 Gbit/s per telescope) two SRCs may take only 40 % of it, and one alone 20 %, by design (no
    plan exceeds a budget). They stand for the several SRCs a full link feeds. None: as the reference."""
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from topology.management.commands.import_topology import REFERENCE
    from topology.models import RegionalCentre
    from topology.services.importer import import_topology

    call_command("migrate", verbosity=0)
    call_command("flush", interactive=False, verbosity=0)  # this state's own database: a clean slate
    import_topology(text=REFERENCE.read_text())
    if src_budget_bps is not None:
        RegionalCentre.objects.filter(name__in=("UKSRC", "AUSRC")).update(
            budget_per_telescope_bps=int(src_budget_bps), peak_bps=int(src_budget_bps)
        )
    user, _ = get_user_model().objects.get_or_create(username="bench", defaults={"is_staff": True})
    return user


def delete_verified(cleaned: set[int], campaign_id: int) -> int:
    """Delete the files of the campaign's products whose replica is AVAILABLE (adler32 verified at the
    destination): at every replica, the SDP's included. The rows stay for the score."""
    from XRootD import client

    from campaigns.services import storage_token
    from replicas.choices import ProductState
    from replicas.models import DataProduct
    from transfers.tokens import url_with_token

    removed = 0
    done = DataProduct.objects.filter(
        campaign_link__campaign_id=campaign_id, state=ProductState.PLACED
    ).exclude(pk__in=cleaned)
    for product in done.prefetch_related("files", "replicas__endpoint"):
        for replica in product.replicas.all():
            endpoint = replica.endpoint
            fs = client.FileSystem(f"root://{endpoint.hostname}:{endpoint.root_port}")
            token = storage_token(endpoint, f"storage.modify:/{product.scope}/{product.name}")
            for f in product.files.all():
                path = f"/{endpoint.prefix}{f.relative_path}".replace("//", "/")
                status, _ = fs.rm(url_with_token(path, token), timeout=10)
                removed += int(status.ok)
        cleaned.add(product.pk)
    return removed


def waiting_products(campaign_id: int) -> dict[str, int]:
    """The campaign's products not yet delivered, per destination, and how many of them still wait at the
    SDP (registered, no copy submitted)."""
    from django.db.models import Count

    from replicas.choices import ProductState
    from replicas.models import DataProduct

    rows = (
        DataProduct.objects.filter(campaign_link__campaign_id=campaign_id)
        .exclude(state__in=[ProductState.PLACED, ProductState.FAILED])
        .values("campaign_link__destination", "state")
        .annotate(n=Count("id"))
    )
    waiting: dict[str, int] = {UK: 0, AU: 0, "queued": 0}
    for row in rows:
        waiting[row["campaign_link__destination"]] = (
            waiting.get(row["campaign_link__destination"], 0) + row["n"]
        )
        if row["state"] == ProductState.REGISTERED:
            waiting["queued"] += row["n"]
    return waiting


def shown_predictions(campaign_id: int) -> dict[str, float]:
    """Product id -> the arrival the platform shows for it now (epoch seconds), for each of the campaign's
    products not yet delivered: what a scientist would read at this moment."""
    from replicas.choices import ProductState
    from replicas.models import DataProduct

    rows = (
        DataProduct.objects.filter(campaign_link__campaign_id=campaign_id, predicted_arrival__isnull=False)
        .exclude(state__in=[ProductState.PLACED, ProductState.FAILED])
        .values_list("pk", "predicted_arrival")
    )
    return {str(pk): at.timestamp() for pk, at in rows if at is not None}


def disk_used(paths: list[Path]) -> int:
    total = 0
    for root in paths:
        for dirpath, _, names in os.walk(root):
            for name in names:
                with contextlib.suppress(OSError):
                    total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


@contextlib.contextmanager
def hystart(setting: str) -> Iterator[None]:
    """CUBIC's HyStart as asked for the real run (bench/wan/tuning.py: kernel-wide, restored after)."""
    from localnet.longhaul import wannet

    wannet()  # puts bench/wan on the path
    import tuning

    with tuning.cubic_hystart(None if setting == "keep" else setting == "on"):
        yield
