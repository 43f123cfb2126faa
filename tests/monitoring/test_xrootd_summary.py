"""XRootD's summary monitoring: a real site reports (``xrd.report``, as every local site is configured) to
the real exporter process, whose /metrics then shows the site's traffic; a packet that is not a report is
counted and dropped."""

from __future__ import annotations

import os
import socket
import subprocess
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from localnet.issuer import LocalIssuer
from localnet.stack import VENV_BIN
from localnet.state import StateDir, free_port
from localnet.xrootd import LocalSite, stop_site
from monitoring.xrootd_summary import SummaryError, parse_summary
from tests.conftest import site_token, token_site, wait_until
from transfers.tokens import url_with_token as with_token

from .conftest import serving

SITE = "MON-SUMMARY"


@pytest.fixture
def exporter(test_state: StateDir) -> Iterator[str]:
    """The exporter, listening where the state's sites report, as localnet/monitoring.py starts it."""
    http = free_port()
    argv = [
        str(VENV_BIN / "python"),
        "-m",
        "monitoring.xrootd_exporter",
        f"--udp=127.0.0.1:{test_state.port('xrootd-summary')}",
        f"--http=127.0.0.1:{http}",
    ]
    with serving(
        test_state, argv, http, what="the XRootD summary exporter", log_name="pytest-xrootd-exporter.log"
    ) as url:
        yield f"{url}/metrics"


@pytest.fixture
def site(test_state: StateDir, token_issuer: LocalIssuer) -> Iterator[LocalSite]:
    try:
        yield token_site(test_state, token_issuer, SITE)
    finally:
        stop_site(test_state, SITE)


def samples(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(url, timeout=5) as answer:
        text = answer.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_a_real_site_reports_its_traffic(exporter: str, site: LocalSite, token_issuer, tmp_path) -> None:  # type: ignore[no-untyped-def]
    payload = os.urandom(3 * 2**20)
    target = site.local_path("srcnet/summary/probe.bin")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(payload)
    os.chmod(target, 0o644)
    env = {**os.environ, "XRD_CONNECTIONRETRY": "1"}
    copy = subprocess.run(
        [
            "xrdcp",
            "-f",
            with_token(
                site.root_url("srcnet/summary/probe.bin"),
                site_token(token_issuer, site, "storage.read:/summary"),
            ),
            str(tmp_path / "back.bin"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert copy.returncode == 0, copy.stderr
    assert (tmp_path / "back.bin").read_bytes() == payload
    me = (("site", SITE),)

    def reported() -> dict:  # type: ignore[type-arg]
        found = samples(exporter)
        sent = found.get(("srcnet_xrootd_sent_bytes_total", me), 0)
        return found if sent >= len(payload) else {}

    found = wait_until(reported, timeout=30, interval=1, what="the copy in the site's summary report")
    assert found[("srcnet_xrootd_operations_total", (("operation", "open"), ("site", SITE)))] >= 1
    assert found[("srcnet_xrootd_connections_total", me)] >= 1
    assert found[("srcnet_xrootd_threads", me)] >= 1
    assert found[("srcnet_xrootd_cpu_seconds_total", (("mode", "user"), ("site", SITE)))] > 0
    space = {k: v for k, v in found.items() if k[0] == "srcnet_xrootd_space_bytes"}
    free = {k: v for k, v in found.items() if k[0] == "srcnet_xrootd_space_free_bytes"}
    assert space and all(0 < free[("srcnet_xrootd_space_free_bytes", k[1])] <= v for k, v in space.items())
    assert found[("srcnet_xrootd_summary_rejected_packets_total", ())] == 0


def test_a_packet_that_is_not_a_report_is_counted_and_dropped(exporter: str, test_state: StateDir) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
        sender.sendto(b"<html>not a report</html>", ("127.0.0.1", test_state.port("xrootd-summary")))
    wait_until(
        lambda: samples(exporter).get(("srcnet_xrootd_summary_rejected_packets_total", ())) == 1,
        timeout=10,
        what="the rejected packet counted",
    )
    with pytest.raises(SummaryError):
        parse_summary(b"not xml at all")


def test_the_monitoring_command_starts_and_stops_them(test_state: StateDir, capsys) -> None:  # type: ignore[no-untyped-def]
    """``python -m localnet monitoring up|down`` on a state whose web server and FTS3 service do not run:
    Prometheus scrapes the node exporter and the XRootD summary exporter, and everything stops by PID."""
    import json

    from localnet.__main__ import main as localnet_main
    from localnet.monitoring import DAEMONS, get_json, reset_monitoring_data, stop_monitoring
    from localnet.processes import is_alive, read_pid

    name = test_state.path.name
    stop_monitoring(test_state)
    pids: list[int | None] = []
    try:
        assert localnet_main(["monitoring", "up", "--state", name, "--interval", "2s"]) == 0
        started = json.loads(capsys.readouterr().out)
        assert started["control_plane"] is None and started["fts3"] is None
        pids = [read_pid(test_state, daemon) for daemon in DAEMONS]
        assert all(is_alive(pid) for pid in pids)

        def up_jobs() -> set[str]:
            targets = get_json(f"{started['prometheus_url']}/api/v1/targets")["data"]["activeTargets"]
            return {t["labels"]["job"] for t in targets if t["health"] == "up"}

        assert wait_until(
            lambda: up_jobs() == {"srcnet-node", "srcnet-xrootd"}, timeout=30, what="the targets"
        )
    finally:
        assert localnet_main(["monitoring", "down", "--state", name]) == 0
        reset_monitoring_data(test_state)
    assert capsys.readouterr().out.strip() == "stopped: " + ", ".join(DAEMONS)
    assert not any(is_alive(pid) for pid in pids)
