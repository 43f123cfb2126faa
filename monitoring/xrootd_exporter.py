"""A small exporter of XRootD's summary monitoring: the sites' ``xrd.report`` packets in (UDP), Prometheus
metrics out (HTTP ``/metrics``), the last report of each site.

    python -m monitoring.xrootd_exporter --udp 127.0.0.1:PORT --http 127.0.0.1:PORT

The local network starts it beside Prometheus (localnet/monitoring.py) and every local site reports to it
(localnet/xrootd.py, ``summary_report_lines``); a deployment points its servers' ``xrd.report`` at it."""

from __future__ import annotations

import argparse
import logging
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from .xrootd_summary import SiteSummary, SummaryError, parse_summary

log = logging.getLogger("srcnet.xrootd_exporter")


class SummaryStore(Collector):
    """The last report of every site, exported as metrics at scrape time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sites: dict[str, SiteSummary] = {}
        self.rejected = 0

    def receive(self, packet: bytes) -> SiteSummary | None:
        try:
            summary = parse_summary(packet)
        except SummaryError as exc:
            log.warning("dropped a packet: %s", exc)
            with self._lock:
                self.rejected += 1
            return None
        with self._lock:
            self._sites[summary.site] = summary
        return summary

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            sites = sorted(self._sites.values(), key=lambda s: s.site)
            rejected = self.rejected
        site = ["site"]

        def gauge(name: str, text: str, labels: list[str] = site) -> GaugeMetricFamily:
            return GaugeMetricFamily(f"srcnet_xrootd_{name}", text, labels=labels)

        def counter(name: str, text: str, labels: list[str] = site) -> CounterMetricFamily:
            return CounterMetricFamily(f"srcnet_xrootd_{name}", text, labels=labels)

        last = gauge("last_report_timestamp_seconds", "Unix time of the site's last summary report")
        connections = gauge("connections", "Client connections open")
        connections_total = counter("connections", "Client connections accepted since the server started")
        received = counter("received_bytes", "Bytes received from clients")
        sent = counter("sent_bytes", "Bytes sent to clients")
        stalls = counter("stalls", "Times a client was told to wait")
        timeouts = counter("timeouts", "Client connections that timed out")
        operations = counter("operations", "Requests by XRootD operation", ["site", "operation"])
        errors = counter("errors", "Requests that ended in an error")
        tpc = counter("third_party_copies", "Third-party copies by outcome", ["site", "outcome"])
        space = gauge("space_bytes", "Space of a storage path", ["site", "path"])
        free = gauge("space_free_bytes", "Free space of a storage path", ["site", "path"])
        threads = gauge("threads", "Scheduler threads")
        idle = gauge("idle_threads", "Scheduler threads idle")
        queued = gauge("queued_jobs", "Jobs waiting for a scheduler thread")
        cpu = counter("cpu_seconds", "CPU the server used", ["site", "mode"])
        for s in sites:
            name = [s.site]
            last.add_metric(name, s.time)
            for family, value in (
                (connections, s.connections),
                (connections_total, s.connections_total),
                (received, s.bytes_in),
                (sent, s.bytes_out),
                (stalls, s.stalls),
                (timeouts, s.timeouts),
                (errors, s.errors),
                (threads, s.threads),
                (idle, s.idle_threads),
                (queued, s.queued_jobs),
            ):
                if value is not None:
                    family.add_metric(name, value)
            for op, count in s.operations.items():
                operations.add_metric([s.site, op], count)
            for outcome, count in s.tpc.items():
                tpc.add_metric([s.site, outcome], count)
            for path, total, available in s.space:
                space.add_metric([s.site, path], total)
                free.add_metric([s.site, path], available)
            for mode, seconds in (("user", s.cpu_user_seconds), ("system", s.cpu_system_seconds)):
                if seconds is not None:
                    cpu.add_metric([s.site, mode], seconds)
        yield from (
            last,
            connections,
            connections_total,
            received,
            sent,
            stalls,
            timeouts,
            operations,
            errors,
        )
        yield from (tpc, space, free, threads, idle, queued, cpu)
        yield CounterMetricFamily(
            "srcnet_xrootd_summary_rejected_packets", "Packets that were not summary reports", value=rejected
        )


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host or "127.0.0.1", int(port)


class _QuietHandler(WSGIRequestHandler):
    """No line per scrape in the log."""

    def log_message(self, format: str, *args: object) -> None:
        pass


def serve(udp: tuple[str, int], http: tuple[str, int], store: SummaryStore | None = None) -> None:
    """Receive reports on ``udp`` and answer scrapes on ``http`` until SIGTERM or SIGINT."""
    store = store or SummaryStore()
    registry = CollectorRegistry(auto_describe=False)
    registry.register(store)
    server = make_server(http[0], http[1], make_wsgi_app(registry), handler_class=_QuietHandler)
    threading.Thread(target=server.serve_forever, name="metrics-http", daemon=True).start()
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(udp)
    receiver.settimeout(0.5)
    stopping = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.set())
    log.info("summary reports on udp %s:%d, metrics on http %s:%d", *udp, *http)
    try:
        while not stopping.is_set():
            try:
                packet = receiver.recv(65536)
            except TimeoutError:
                continue
            store.receive(packet)
    finally:
        receiver.close()
        server.shutdown()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m monitoring.xrootd_exporter", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--udp", required=True, help="host:port the sites' xrd.report sends to")
    parser.add_argument("--http", required=True, help="host:port of /metrics")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    serve(_address(args.udp), _address(args.http))
    return 0


if __name__ == "__main__":
    sys.exit(main())
