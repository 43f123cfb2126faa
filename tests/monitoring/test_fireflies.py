"""The firefly collector (monitoring/fireflies) over real UDP on the loopback, IPv4 and IPv6: valid start and
end fireflies are counted with their bytes (per experiment, activity and lane), each kind of bad packet is
dropped and counted by reason, a flood of 50 000 distinct flows leaves the open-flow table at its cap, and
the service process runs unprivileged and stops cleanly on SIGTERM. No Django, no database."""

from __future__ import annotations

import ipaddress
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from localnet.processes import stop_pid, wait_for_port
from localnet.stack import VENV_BIN
from localnet.state import PROJECT_ROOT, free_port
from localnet.users import chown_tree, drop_to, grant_traversal, service_account
from monitoring.fireflies.collector import FireflyCollector
from monitoring.fireflies.ledger import FlowLedger, FlowRecord, Lane
from monitoring.fireflies.packets import MAX_DATAGRAM_BYTES
from tests.fireflies import datagram, firefly

# The platform's storage endpoints, by address: what a resolver wired to the topology would answer.
ENDPOINTS = {
    ipaddress.ip_address("10.0.0.1"): "SKA1-LOW_SDP",
    ipaddress.ip_address("10.0.0.2"): "AUSRC_DISK",
    ipaddress.ip_address("fd00:10::1"): "SKA1-MID_SDP",
    ipaddress.ip_address("fd00:20::1"): "UKSRC_DISK",
}


def resolve(
    src: ipaddress.IPv4Address | ipaddress.IPv6Address, dst: ipaddress.IPv4Address | ipaddress.IPv6Address
):  # type: ignore[no-untyped-def]
    if src in ENDPOINTS and dst in ENDPOINTS:
        return Lane(ENDPOINTS[src], ENDPOINTS[dst])
    return None


def wait_for(predicate, *, timeout: float = 20.0, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    pytest.fail(f"timed out after {timeout} s waiting for {what}")


TOKEN = "a-token-for-the-tests-collectors"


def scrape(address: tuple[str, int]) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of /metrics, by name and sorted labels (with the collector's token)."""
    request = urllib.request.Request(
        f"http://{address[0]}:{address[1]}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        text = answer.read().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


class Sender:
    """UDP to the collector's IPv4 and IPv6 sockets."""

    def __init__(self, addresses: list[tuple[str, int]]) -> None:
        self.addresses = addresses
        self.v4 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.v6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)

    def send(self, packet: bytes, *, ipv6: bool = False) -> None:
        host, port = next(a for a in self.addresses if (":" in a[0]) == ipv6)
        (self.v6 if ipv6 else self.v4).sendto(packet, (host, port))

    def close(self) -> None:
        self.v4.close()
        self.v6.close()


@pytest.fixture
def ended() -> list[FlowRecord]:
    return []


@pytest.fixture
def collector(ended: list[FlowRecord]) -> Iterator[FireflyCollector]:
    """A collector on ephemeral loopback ports (IPv4 and IPv6), its metrics served; always stopped."""
    ledger = FlowLedger(max_open_flows=1000, resolver=resolve, on_flow_end=ended.append)
    running = FireflyCollector(
        ["127.0.0.1:0", "[::1]:0"], ledger=ledger, metrics="127.0.0.1:0", http_token=TOKEN
    ).start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def sender(collector: FireflyCollector) -> Iterator[Sender]:
    sending = Sender(collector.udp_addresses)
    yield sending
    sending.close()


def test_start_and_end_fireflies_are_counted_with_their_bytes(collector, sender, ended) -> None:  # type: ignore[no-untyped-def]
    v4: dict[str, Any] = {"src": "10.0.0.1", "dst": "10.0.0.2"}
    v6: dict[str, Any] = {"src": "fd00:10::1", "dst": "fd00:20::1", "activity": 5}
    sender.send(datagram(firefly("start", **v4)))
    sender.send(datagram(firefly("start", **v6), header="flowd-go"), ipv6=True)
    wait_for(lambda: collector.ledger.open_flows == 2, what="two open flows")
    sender.send(datagram(firefly("end", received=1_000, sent=25_000_000, **v4)))
    sender.send(datagram(firefly("end", received=7, sent=3_000_000, **v6), header="none"), ipv6=True)
    wait_for(lambda: collector.ledger.accepted == 4, what="four fireflies")

    metrics = scrape(collector.metrics_address)
    flows = {
        labels: value for (name, labels), value in metrics.items() if name == "srcnet_firefly_flows_total"
    }
    assert flows == {
        (("activity", "3"), ("experiment", "20"), ("state", "start")): 1,
        (("activity", "3"), ("experiment", "20"), ("state", "end")): 1,
        (("activity", "5"), ("experiment", "20"), ("state", "start")): 1,
        (("activity", "5"), ("experiment", "20"), ("state", "end")): 1,
    }
    byte_counts = {
        labels: value for (name, labels), value in metrics.items() if name == "srcnet_firefly_bytes_total"
    }
    assert byte_counts == {
        (("activity", "3"), ("direction", "received"), ("experiment", "20")): 1_000,
        (("activity", "3"), ("direction", "sent"), ("experiment", "20")): 25_000_000,
        (("activity", "5"), ("direction", "received"), ("experiment", "20")): 7,
        (("activity", "5"), ("direction", "sent"), ("experiment", "20")): 3_000_000,
    }
    lane = (("destination", "AUSRC_DISK"), ("direction", "sent"), ("source", "SKA1-LOW_SDP"))
    assert metrics[("srcnet_firefly_lane_bytes_total", lane)] == 25_000_000
    lane6 = (("destination", "UKSRC_DISK"), ("source", "SKA1-MID_SDP"))
    assert metrics[("srcnet_firefly_lane_flows_total", lane6)] == 1
    assert metrics[("srcnet_firefly_open_flows", ())] == 0
    assert metrics[("srcnet_firefly_packets_received_total", ())] == 4
    assert all(
        value == 0 for (name, _), value in metrics.items() if name == "srcnet_firefly_packets_dropped_total"
    )

    # The hook later work attributes to rules: every ended flow, with its lane and duration.
    assert sorted((r.lane, r.sent_bytes, r.duration_seconds, r.start_seen) for r in ended) == [
        (Lane("SKA1-LOW_SDP", "AUSRC_DISK"), 25_000_000, 42.5, True),
        (Lane("SKA1-MID_SDP", "UKSRC_DISK"), 3_000_000, 42.5, True),
    ]


def test_each_kind_of_bad_packet_is_dropped_and_counted_by_reason(collector, sender) -> None:  # type: ignore[no-untyped-def]
    valid = firefly("end", received=5, sent=5)
    schema_broken = firefly("end")
    del schema_broken["flow-lifecycle"]["end-time"]
    bad = {
        "oversized": b"{" + b" " * (MAX_DATAGRAM_BYTES + 100) + b"}",
        "not_utf8": b"\xff" + datagram(valid),
        "syslog_header": b"<134>garbage " + datagram(valid, header="none"),
        "not_json": b"<134>1 - host xrootd - firefly-json - {not json",
        "schema": datagram(schema_broken),
        "out_of_range": datagram(firefly("end", experiment=4096)),
    }
    for packet in bad.values():
        sender.send(packet)
    sender.send(bad["out_of_range"], ipv6=True)
    wait_for(lambda: collector.ledger.received == len(bad) + 1, what="every packet received")

    metrics = scrape(collector.metrics_address)
    dropped = {
        dict(labels)["reason"]: value
        for (name, labels), value in metrics.items()
        if name == "srcnet_firefly_packets_dropped_total"
    }
    assert dropped == {reason: (2 if reason == "out_of_range" else 1) for reason in bad}
    assert metrics[("srcnet_firefly_packets_accepted_total", ())] == 0
    assert not [name for (name, _), _ in metrics.items() if name == "srcnet_firefly_bytes_total"]


def test_a_flood_of_distinct_flows_leaves_the_open_flows_at_their_cap(collector, sender) -> None:  # type: ignore[no-untyped-def]
    """50 000 start fireflies of distinct flows (a flow per source address and port): the table keeps the
    1 000 most recent, the rest are evicted and counted; the labels stay one (experiment, activity) pair.
    Sent in batches the collector is let to catch up with, so that the kernel's socket buffer drops none
    and every figure is exact."""
    total, batch = 50_000, 2_500
    started = time.monotonic()
    for first in range(0, total, batch):
        for number in range(first, first + batch):
            source = f"10.{number >> 16 & 255}.{number >> 8 & 255}.{number & 255}"
            sender.send(datagram(firefly("start", src=source, src_port=1024 + number % 60000)))
        wait_for(lambda end=first + batch: collector.ledger.received >= end, what=f"{first + batch} packets")
    seconds = time.monotonic() - started

    ledger = collector.ledger
    assert ledger.received == ledger.accepted == total
    assert ledger.open_flows == ledger.max_open_flows == 1000
    assert ledger.evicted == total - 1000
    metrics = scrape(collector.metrics_address)
    assert metrics[("srcnet_firefly_open_flows", ())] == 1000
    assert metrics[("srcnet_firefly_open_flows_evicted_total", ())] == total - 1000
    flow_series = [labels for (name, labels), _ in metrics.items() if name == "srcnet_firefly_flows_total"]
    assert flow_series == [(("activity", "3"), ("experiment", "20"), ("state", "start"))]
    print(f"{total} fireflies in {seconds:.1f} s ({total / seconds:.0f}/s)")


def test_label_sets_are_capped() -> None:
    """More distinct (experiment, activity) pairs than the cap: the first ones keep their labels, the rest
    are counted under 'other'."""
    ledger = FlowLedger(max_label_sets=4)
    for experiment in range(1, 11):
        assert (
            ledger.receive(datagram(firefly("start", experiment=experiment, src_port=experiment))) is not None
        )
    experiments = sorted(
        sample.labels["experiment"]
        for family in ledger.collect()
        if family.name == "srcnet_firefly_flows"
        for sample in family.samples
    )
    assert experiments == ["1", "2", "3", "4", "other"]
    assert ledger.label_overflow == 6


def test_the_service_runs_unprivileged_and_stops_on_sigterm(tmp_path) -> None:  # type: ignore[no-untyped-def]
    port, metrics_port = free_port(), free_port()
    account = service_account()
    if account is not None:
        grant_traversal(account, PROJECT_ROOT / "monitoring" / "fireflies" / "collector.py")
    token_file = tmp_path / "http.token"
    token_file.write_text(TOKEN + "\n")
    if account is not None:
        grant_traversal(account, token_file)
        chown_tree(token_file, account)
    argv = [
        str(VENV_BIN / "python"),
        "-m",
        "monitoring.fireflies",
        f"--listen=127.0.0.1:{port}",
        f"--listen=[::1]:{port}",
        f"--metrics=127.0.0.1:{metrics_port}",
        f"--http-token-file={token_file}",
        "--max-open-flows=10",
    ]
    log = tmp_path / "collector.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=PROJECT_ROOT,
            start_new_session=True,
            **drop_to(account),
        )
    try:
        wait_for_port(metrics_port, pid=proc.pid, what="the firefly collector", timeout=30)
        with open(f"/proc/{proc.pid}/status") as status:
            uid = next(line.split()[1] for line in status if line.startswith("Uid:"))
        assert uid != "0"
        sender = Sender([("127.0.0.1", port), ("::1", port)])
        try:
            sender.send(datagram(firefly("start")))
            sender.send(datagram(firefly("end", received=0, sent=999)), ipv6=True)
            sender.send(b"not a firefly")
        finally:
            sender.close()

        def counted() -> bool:
            metrics = scrape(("127.0.0.1", metrics_port))
            return metrics.get(("srcnet_firefly_packets_received_total", ())) == 3

        wait_for(counted, what="three packets counted by the service")
        metrics = scrape(("127.0.0.1", metrics_port))
        sent = (("activity", "3"), ("direction", "sent"), ("experiment", "20"))
        assert metrics[("srcnet_firefly_bytes_total", sent)] == 999
        assert metrics[("srcnet_firefly_packets_dropped_total", (("reason", "not_json"),))] == 1

        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
        assert "stopped: 3 datagrams received, 2 accepted, 0 open flows" in log.read_text()
    finally:
        stop_pid(proc.pid, timeout=5)
        proc.wait(timeout=10)


def test_the_service_refuses_root(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """As root (CI's account): the real command, refused. As another account, which root's refusal cannot
    reach, the same entry point in-process with the effective uid read as 0 (never skipped)."""
    if os.geteuid() == 0:
        argv = [str(VENV_BIN / "python"), "-m", "monitoring.fireflies", "--listen=127.0.0.1:0"]
        done = subprocess.run(argv, capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=30)
        assert done.returncode == 2
        assert "does not run as root" in done.stderr
        return
    from monitoring.fireflies import collector

    monkeypatch.setattr(collector.os, "geteuid", lambda: 0)
    assert collector.main(["--listen=127.0.0.1:0"]) == 2
    assert "does not run as root" in capsys.readouterr().err


def test_its_http_server_answers_only_with_its_token(collector) -> None:  # type: ignore[no-untyped-def]
    host, port = collector.metrics_address
    for path in ("/metrics", "/flows"):
        for headers in ({}, {"Authorization": "Bearer not-the-token"}, {"Authorization": TOKEN}):
            request = urllib.request.Request(f"http://{host}:{port}{path}", headers=headers)
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(request, timeout=5)
            assert refused.value.code == 401 and refused.value.headers["WWW-Authenticate"] == "Bearer"
    assert scrape(collector.metrics_address)  # with it: answered


def test_there_is_no_http_server_without_a_token(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ValueError, match="needs a bearer token"):
        FireflyCollector(["127.0.0.1:0"], metrics="127.0.0.1:0")
    from monitoring.fireflies import collector

    with pytest.raises(SystemExit) as stopped:
        collector.main(["--listen=127.0.0.1:0", "--metrics=127.0.0.1:0"])
    assert stopped.value.code == 2 and "--metrics needs --http-token-file" in capsys.readouterr().err
