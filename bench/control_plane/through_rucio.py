"""The end-to-end benchmark's Rucio side (``end_to_end.py --through rucio``): the push loop hands each due leg
to Rucio as a rule, Rucio's own daemons (conveyor submitter, poller, finisher) hand the copies to the
platform's FTS3 endpoint over HTTPS and record their outcomes, and the worker's beat follows the rules into
the platform's replicas, as ``localnet demo --rucio`` runs (localnet/demo_rucio.py). Every RSE is a mock
endpoint's (its one protocol ``mock``, replicas/rucio.py), so no byte moves on either side.

What is measured on each side, per file, so that the slower side shows:

* Rucio's: from the rule to the conveyor's submission (``rucio_submit``: the submitter's turn), and from
  the platform's end of the copy to the replica the platform sees AVAILABLE (``rucio_finish``: the poller
  asking, the finisher recording, the rule going OK, the follower's next round);
* the platform's: from the submission to the copy's start (``platform_queued``) and the copy itself
  (``copying``), and the files per second its FTS3 endpoint took and finished.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import defaultdict
from typing import Any

from figures import _best_window, rate_and_latency

# Rucio's processes whose CPU the run counts, by PID-file name (localnet/rucio_daemons.py).
RUCIO_PROCESSES = {
    "rucio_server": "rucio",
    "conveyor_submitter": "rucio.conveyor-submitter",
    "conveyor_poller": "rucio.conveyor-poller",
    "conveyor_finisher": "rucio.conveyor-finisher",
    "judge_evaluator": "rucio.judge-evaluator",
}


def run_scope(now: dt.datetime) -> str:
    """A scope of this run's own: names in Rucio are never reused, even after their rules go."""
    return f"e2e{now:%m%d%H%M%S}"


def prepare(state: Any, name: str, *, pooled: bool = True) -> dict[str, Any]:
    """Rucio's server and daemons on an empty catalogue, every (mock) endpoint its RSE, the FTS3 endpoint
    running, and the environment of the worker started next set to follow Rucio's rules. Tokens as in
    production: the conveyor presents its own, and the worker asks the issuer for one per end of each copy,
    with the endpoint's audience (which the issuer is told of here; the mock storage checks none).
    ``pooled``: Rucio keeps its database connections in a pool (else one per session, as in the tests)."""
    from localnet.demo_rucio import prepare as prepare_rucio
    from localnet.issuer import allow_audience
    from topology.models import StorageEndpoint

    prepared = prepare_rucio(state, name, fresh=True, mock_storage=True, pooled=pooled)
    for endpoint in StorageEndpoint.objects.all():
        allow_audience(prepared["issuer"], endpoint.audience)
    return prepared


def component_pids(state: Any) -> dict[str, int]:
    """The FTS3 endpoint's and Rucio's processes (each a process tree: gunicorn with its workers)."""
    from localnet.processes import read_pid

    names = {"fts3_endpoint": "fts3", "token_issuer": "issuer", **RUCIO_PROCESSES}
    pids = {component: read_pid(state, pid_name) for component, pid_name in names.items()}
    missing = sorted(component for component, pid in pids.items() if pid is None)
    if missing:
        raise RuntimeError(f"not running: {', '.join(missing)} (see {state.path / 'log'})")
    return {component: int(pid) for component, pid in pids.items() if pid is not None}


def timeline(scope: str, started: dt.datetime, available_seen: dict[int, dt.datetime]) -> dict[str, Any]:
    """The rate and stages of a run through Rucio. ``available_seen``: when each destination replica was
    first seen AVAILABLE (the benchmark looks every second), the end of its files' journey."""
    from replicas.models import ProductFile, Replica
    from schedulers.models import PlannedRule
    from transfers.models import TransferAttempt, TransferFile

    replicas = {
        r.pk: r
        for r in Replica.objects.filter(pk__in=list(available_seen)).select_related("product", "endpoint")
    }
    rules = {
        (rule.product_id, rule.rse): rule.created for rule in PlannedRule.objects.filter(product__scope=scope)
    }
    file_counts: dict[int, int] = defaultdict(int)
    for product_id in ProductFile.objects.filter(product__scope=scope).values_list("product_id", flat=True):
        file_counts[product_id] += 1
    copies = _copies_by_replica(scope)
    claims = _first_claims([c["file_id"] for rows in copies.values() for c in rows])
    stages: dict[str, list[float]] = {
        name: [] for name in ("wait_for_rule", "rucio_submit", "platform_queued", "copying", "rucio_finish")
    }
    latency, available_at = [], []
    for replica_id, seen in available_seen.items():
        replica = replicas[replica_id]
        product = replica.product
        ruled = rules.get((product.pk, replica.endpoint.name))
        latency += [(seen - product.created).total_seconds()] * file_counts[product.pk]
        available_at += [(seen - started).total_seconds()] * file_counts[product.pk]
        if ruled is not None:
            stages["wait_for_rule"].append((ruled - product.created).total_seconds())
        for copy in copies.get((product.name, replica.endpoint.name), []):
            claimed = claims.get(copy["file_id"])
            if ruled is not None:
                stages["rucio_submit"].append((copy["submitted"] - ruled).total_seconds())
            if claimed is not None:
                stages["platform_queued"].append((claimed - copy["submitted"]).total_seconds())
                stages["copying"].append((copy["finished"] - claimed).total_seconds())
            stages["rucio_finish"].append((seen - copy["finished"]).total_seconds())
    submitted = TransferFile.objects.filter(dest_surl__contains=f"/{scope}/")
    return {
        "files_finished": len(latency),
        **rate_and_latency(latency, available_at, stages),
        "retried_files": submitted.filter(attempts__gt=1).count(),
        "attempts": TransferAttempt.objects.filter(file__in=submitted).count(),
        "copy_messages": TransferAttempt.objects.filter(file__in=submitted)
        .values("task_id")
        .distinct()
        .count(),
        "sides": _sides(submitted, started),
    }


_PRODUCT_IN_PATH = re.compile(r"/(?P<scope>[^/]+)/(?P<product>[^/]+)/[^/]+$")


def _copies_by_replica(scope: str) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """The finished copies the FTS3 endpoint made for the run, by (product name, destination endpoint):
    the conveyor names the files by path (``<scope>/<product>/<file>`` under the RSE's prefix)."""
    from topology.models import StorageEndpoint
    from transfers.models import TransferFile

    endpoints = {(e.hostname, e.http_port): e.name for e in StorageEndpoint.objects.all()}
    out: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    rows = TransferFile.objects.filter(dest_surl__contains=f"/{scope}/", state="FINISHED").values_list(
        "id", "dest_surl", "job__created", "finish_time"
    )
    for file_id, dest, submitted, finished in rows:
        host_port, path = dest.split("://", 1)[1].split("/", 1)
        host, _, port = host_port.partition(":")
        match = _PRODUCT_IN_PATH.search("/" + path.partition("?")[0])
        endpoint = endpoints.get((host, int(port or 443)))
        if match is None or endpoint is None or match["scope"] != scope:
            continue
        out[(match["product"], endpoint)].append(
            {"file_id": file_id, "submitted": submitted, "finished": finished}
        )
    return out


def _first_claims(file_ids: list[int]) -> dict[int, dt.datetime]:
    """When a worker first claimed each file (its first attempt's claim)."""
    from transfers.models import TransferAttempt

    first: dict[int, dt.datetime] = {}
    rows = TransferAttempt.objects.filter(file_id__in=file_ids, claimed__isnull=False)
    for file_id, claimed in rows.values_list("file_id", "claimed"):
        if file_id not in first or claimed < first[file_id]:
            first[file_id] = claimed
    return first


def _sides(submitted: Any, started: dt.datetime) -> dict[str, Any]:
    """Files per second each side moved on: Rucio's conveyor handing files to the FTS3 endpoint (the jobs'
    creation), the platform finishing them (the files' finish)."""
    handed = [(c - started).total_seconds() for c in submitted.values_list("job__created", flat=True)]
    done = [
        (f - started).total_seconds()
        for f in submitted.filter(finish_time__isnull=False).values_list("finish_time", flat=True)
    ]
    return {
        "rucio_submitted": _rate(handed),
        "platform_finished": _rate(done),
        "jobs": submitted.values("job_id").distinct().count(),
    }


def _rate(times: list[float]) -> dict[str, float]:
    """Files per second from the first to the last of ``times`` (seconds from the run's start), and in the
    best 10 s."""
    if len(times) < 2:
        return {"files": len(times), "files_per_second": 0.0, "best_10s_files_per_second": 0.0}
    span = max(times) - min(times)
    return {
        "files": len(times),
        "files_per_second": round(len(times) / span, 1) if span > 0 else 0.0,
        "best_10s_files_per_second": _best_window(times, 10.0),
    }
