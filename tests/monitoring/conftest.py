"""Fixtures and helpers the monitoring tests that run the real Prometheus share: the control plane's web
server on the test database, a fresh local Prometheus and Alertmanager around a test, and an instant
query."""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.conf import settings

from localnet.monitoring import (
    DAEMONS,
    Monitoring,
    ensure_monitoring,
    get_json,
    reset_monitoring_data,
    stop_monitoring,
)
from localnet.processes import stop_pid, wait_for_port
from localnet.stack import metrics_multiproc_dir, platform_process, spawn_platform_process, web_argv
from localnet.state import StateDir, free_port
from tests.conftest import wait_until


@contextmanager
def serving(
    test_state: StateDir,
    argv: list[str],
    port: int,
    *,
    what: str,
    log_name: str,
    env: dict[str, str] | None = None,
    account: str | None = None,
    stop_timeout: float = 10.0,
    scheme: str = "http",
) -> Iterator[str]:
    """A platform process started as the service account, waited for on ``port``, stopped by its PID
    afterwards; yields ``<scheme>://127.0.0.1:<port>``. ``env``/``account``: the platform's unless given."""
    if env is None:
        env, account = platform_process(test_state, test_state.path.name)
    proc = spawn_platform_process(argv, env, account, test_state.sub("log") / log_name)
    url = f"{scheme}://127.0.0.1:{port}"
    try:
        wait_for_port(port, pid=proc.pid, what=what, timeout=30)
        # Listening is not answering: gunicorn's master listens at once and its workers accept only once
        # they have loaded the application, seconds later on a busy machine (a test's first request timed
        # out in its TLS handshake so, 2026-11-30). Any HTTP answer means a worker is serving.
        wait_until(lambda: _answers(url), timeout=60, interval=0.5, what=f"{what} answering at {url}")
        yield url
    finally:
        stop_pid(proc.pid, timeout=stop_timeout)


def _answers(url: str) -> bool:
    import requests
    import urllib3

    urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
    try:
        requests.get(f"{url}/", timeout=5, verify=False)  # loopback, readiness only: any answer will do
    except requests.RequestException:
        return False
    return True


@pytest.fixture
def control_plane(test_state: StateDir, django_db_setup) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """The control plane's web server (gunicorn, two workers, HTTPS only with the state's CA, as localnet runs
    it) on the test database; yields its https:// URL."""
    env, account = platform_process(test_state, test_state.path.name)
    env["SRCNET_DB_NAME"] = str(settings.DATABASES["default"]["NAME"])
    env["SRCNET_METRICS_WORKER_PING_TIMEOUT"] = "0.2"
    env["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_multiproc_dir(test_state, "pytest-web", account))
    port = free_port()
    argv = web_argv(test_state, port, account, service="pytest-web")
    with serving(
        test_state,
        argv,
        port,
        what="gunicorn",
        log_name="pytest-monitoring-web.log",
        env=env,
        account=account,
        stop_timeout=20,
        scheme="https",
    ) as url:
        yield url


@contextmanager
def running_monitoring(test_state: StateDir, **options: Any) -> Iterator[Monitoring]:
    """The state's Prometheus, Alertmanager and exporters started afresh (no data of an earlier test) with
    ``options`` (ensure_monitoring's), stopped by PID and their data removed afterwards, also on failure."""
    stop_monitoring(test_state)
    reset_monitoring_data(test_state)
    try:
        yield ensure_monitoring(test_state, test_state.path.name, **options)
    finally:
        stopped = stop_monitoring(test_state)
        reset_monitoring_data(test_state)
        assert stopped == list(DAEMONS)


def query(monitoring: Monitoring, promql: str) -> list[dict]:  # type: ignore[type-arg]
    """An instant query's series; the query must succeed."""
    answer = get_json(
        f"{monitoring.prometheus_url}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    )
    assert answer["status"] == "success", answer
    return list(answer["data"]["result"])
