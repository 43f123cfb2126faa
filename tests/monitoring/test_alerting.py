"""An alert fires for real: products wait at SKA1-Low's SDP and nothing leaves its access link, the real
Prometheus scrapes the control plane's /metrics (a gunicorn on the test database), evaluates the
platform's rules and sends the alert to the real Alertmanager; it resolves once the products are placed.

The rules are the shipped ones with every ``for:`` shortened to a few seconds, scraped and evaluated every
2 s, so the test takes seconds rather than the quarter hour an operator would wait."""

from __future__ import annotations

import json
import os
import pwd
import re
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import requests
import yaml
from django.utils import timezone

from localnet.monitoring import (
    DAEMONS,
    RULES_DIR,
    Monitoring,
    ensure_monitoring,
    get_json,
)
from localnet.processes import account_of, is_alive, read_pid
from localnet.state import StateDir
from replicas.choices import ProductState
from replicas.models import DataProduct
from schedulers.models import PushCycle
from tests.conftest import wait_until
from transfers.choices import FileState, JobState
from transfers.models import TransferJob

from ..factories import copy_request
from .conftest import query, running_monitoring
from .data import GIB, copy, product

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

ALERT = "SRCNetAccessLinkBelowTarget"
DASHBOARDS = RULES_DIR.parent.parent / "grafana"


def fast_rules(state: StateDir) -> Path:
    """The shipped rules with every ``for:`` at 2 s."""
    out = state.sub("monitoring") / "rules-fast.yml"
    groups = []
    for path in sorted(RULES_DIR.glob("*.yml")):
        for group in yaml.safe_load(path.read_text())["groups"]:
            for rule in group["rules"]:
                if "for" in rule:
                    rule["for"] = "2s"
            groups.append(group)
    out.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
    return out


@pytest.fixture
def monitoring(test_state: StateDir, control_plane: str, https_fts3: str) -> Iterator[Monitoring]:
    with running_monitoring(
        test_state,
        control_plane=control_plane,
        fts3=https_fts3,
        rule_files=[fast_rules(test_state)],
        interval="2s",
        group_wait="1s",
    ) as monitoring:
        yield monitoring


def waiting_products(count: int) -> list[DataProduct]:
    """Products at SKA1-Low's SDP, due in a day."""
    return [
        product(
            f"waits-{n}", telescope="SKA1-Low", size=GIB, state=ProductState.REGISTERED, deadline_in=86400
        )
        for n in range(count)
    ]


def dashboard_queries() -> list[str]:
    """Every PromQL query of the dashboards, Grafana's variables given the values an "All" selection
    and a short range take (a ``label_values(metric, label)`` variable queries ``metric``)."""
    out = []
    for path in sorted(DASHBOARDS.glob("*.json")):
        dashboard = json.loads(path.read_text())
        for panel in dashboard["panels"]:
            out += [target["expr"] for target in panel.get("targets", [])]
        for variable in dashboard["templating"]["list"]:
            found = re.fullmatch(r"label_values\((.+), *\w+\)", str(variable.get("definition", "")))
            if found:
                out.append(found.group(1))
    return [q.replace("$telescope", ".*").replace("$__rate_interval", "30s") for q in out]


def am_alerts(monitoring: Monitoring) -> list[dict]:  # type: ignore[type-arg]
    return [
        a
        for a in get_json(f"{monitoring.alertmanager_url}/api/v2/alerts")
        if a["labels"]["alertname"] == ALERT
    ]


def test_link_below_target_while_products_wait_reaches_alertmanager(
    reference_topology,
    monitoring: Monitoring,
    control_plane: str,
    https_fts3: str,
    test_state: StateDir,
    xrootd_sites,
    celery_worker,
) -> None:  # type: ignore[no-untyped-def]
    # Every target answers: the control plane, the FTS3 service over HTTPS, the node exporter, the XRootD
    # summary exporter (which the session's sites report to: the dashboards' site panels read it).
    def targets_up() -> dict[str, str]:
        targets = get_json(f"{monitoring.prometheus_url}/api/v1/targets")["data"]["activeTargets"]
        health = {t["labels"]["job"]: t["health"] for t in targets}
        return health if set(health.values()) == {"up"} and len(health) == 4 else {}

    assert wait_until(targets_up, timeout=60, what="every scrape target up") == {
        "srcnet-control-plane": "up",
        "srcnet-fts3": "up",
        "srcnet-node": "up",
        "srcnet-xrootd": "up",
    }
    # Nothing waits yet: the rule is quiet.
    assert not query(monitoring, f'ALERTS{{alertname="{ALERT}"}}')

    products = waiting_products(2)
    firing = wait_until(
        lambda: query(monitoring, f'ALERTS{{alertname="{ALERT}",alertstate="firing"}}'),
        timeout=60,
        interval=1,
        what=f"{ALERT} firing in Prometheus",
    )
    # SKA1-Low only: nothing waits at SKA1-Mid, whose link is as idle.
    assert [(a["metric"]["telescope"], a["metric"]["link"]) for a in firing] == [("SKA1-Low", "low-access")]

    received = wait_until(
        lambda: am_alerts(monitoring), timeout=60, interval=1, what=f"{ALERT} in Alertmanager"
    )
    assert len(received) == 1
    alert = received[0]
    assert alert["status"]["state"] == "active"
    assert alert["labels"]["telescope"] == "SKA1-Low" and alert["labels"]["severity"] == "warning"
    assert alert["annotations"]["summary"] == "SKA1-Low: low-access below target while products wait"

    # The FTS3 service's own request metrics reach Prometheus too (summed over its gunicorn workers).
    ca = str(test_state.path / "pki" / "ca.pem")
    for _ in range(3):
        assert requests.get(f"{https_fts3}/whoami", verify=ca, timeout=10).status_code == 401
    wait_until(
        lambda: query(monitoring, 'sum(srcnet_fts3_requests_total{endpoint="whoami",status="401"}) >= 3'),
        timeout=30,
        interval=1,
        what="the FTS3 service's request count in Prometheus",
    )

    # Every query of the Grafana dashboards parses and returns series, with a copy of each outcome and a
    # push cycle on record (while the products still wait).
    job = TransferJob.objects.create(state=JobState.ACTIVE)
    moving = product("moving", telescope="SKA1-Low", size=GIB, state=ProductState.PLACING, deadline_in=None)
    copy_request(moving, job_id=str(job.job_id), planned_bps=1e9, streams=4)
    for index, state in enumerate((FileState.FINISHED, FileState.FAILED, FileState.ACTIVE)):
        copy(job, index, source="SKA1-LOW_SDP", destination="UKSRC_DISK", state=state, size=GIB)
    PushCycle.objects.create(duration_seconds=0.2)
    arrived = timezone.now()
    copy_request(
        moving,
        lane=("SKA1-Low", "AUSRC"),
        predicted_arrival=arrived - timedelta(seconds=5),
        state=JobState.FINISHED,
        settled=arrived,
    )
    # The real worker runs the canary: its run is on record for the task panels.
    from srcnet.celery import app

    app.send_task("monitoring.canary")
    queries = dashboard_queries()
    assert len(queries) >= 20
    for promql in queries:
        wait_until(lambda q=promql: query(monitoring, q), timeout=30, interval=1, what=f"series for {promql}")

    # Placed, the products no longer wait: the alert resolves in Prometheus and in Alertmanager.
    DataProduct.objects.filter(pk__in=[p.pk for p in products]).update(state=ProductState.PLACED)
    wait_until(
        lambda: not query(monitoring, f'ALERTS{{alertname="{ALERT}"}}'),
        timeout=60,
        interval=1,
        what=f"{ALERT} resolved in Prometheus",
    )
    wait_until(
        lambda: not am_alerts(monitoring), timeout=60, interval=1, what=f"{ALERT} resolved in Alertmanager"
    )
    # Unprivileged, as every platform process: the service account when the tests run as root.
    for daemon in DAEMONS:
        pid = read_pid(test_state, daemon)
        assert is_alive(pid)
        assert account_of(pid) == ("srcnet" if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name)

    # A second start finds them running and makes Prometheus re-read its configuration (here: without the
    # FTS3 service), by the same processes.
    pids = {daemon: read_pid(test_state, daemon) for daemon in DAEMONS}
    again = ensure_monitoring(
        test_state, test_state.path.name, control_plane=control_plane, fts3=None, interval="2s"
    )
    assert again == monitoring
    assert {daemon: read_pid(test_state, daemon) for daemon in DAEMONS} == pids

    def jobs() -> set[str]:
        targets = get_json(f"{monitoring.prometheus_url}/api/v1/targets")["data"]["activeTargets"]
        return {t["labels"]["job"] for t in targets}

    wait_until(lambda: "srcnet-fts3" not in jobs(), timeout=30, interval=0.5, what="the new configuration")
    assert jobs() == {"srcnet-control-plane", "srcnet-node", "srcnet-xrootd"}
