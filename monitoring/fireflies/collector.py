"""The platform's firefly collector: SciTags fireflies in (UDP, IPv4 and IPv6), Prometheus metrics out
(HTTP ``/metrics``).

    python -m monitoring.fireflies --listen 0.0.0.0:10514 --listen [::]:10514 --metrics 127.0.0.1:9105

It runs as an unprivileged account (it refuses root: 10514 needs no privilege) and stops cleanly on
SIGTERM or SIGINT: its sockets closed, its metrics server shut down, exit status 0."""

from __future__ import annotations

import argparse
import logging
import os
import selectors
import signal
import socket
import sys
import threading
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app

from .ledger import FlowLedger
from .packets import MAX_DATAGRAM_BYTES

log = logging.getLogger("srcnet.fireflies")

DEFAULT_PORT = 10514


def parse_address(text: str, default_port: int = DEFAULT_PORT) -> tuple[int, str, int]:
    """(address family, host, port) of ``host:port``, ``[v6]:port``, ``v6`` alone or ``host`` alone."""
    text = text.strip()
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest.removeprefix(":") or str(default_port)
    elif text.count(":") > 1:
        host, port = text, str(default_port)
    else:
        host, _, port = text.partition(":")
        port = port or str(default_port)
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"{text}: not a port")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return family, host or "0.0.0.0", int(port)


class _QuietHandler(WSGIRequestHandler):
    """No line per scrape in the log."""

    def log_message(self, format: str, *args: object) -> None:
        pass


class _MetricsServer(WSGIServer):
    address_family = socket.AF_INET


class _MetricsServer6(WSGIServer):
    address_family = socket.AF_INET6


class FireflyCollector:
    """UDP sockets feeding a ``FlowLedger``, and optionally an HTTP server of its metrics."""

    def __init__(
        self,
        listen: list[str],
        *,
        ledger: FlowLedger | None = None,
        metrics: str | None = None,
        receive_buffer: int = 4 << 20,
    ) -> None:
        if not listen:
            raise ValueError("at least one address to listen on")
        self.ledger = ledger or FlowLedger()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.sockets: list[socket.socket] = []
        try:
            for text in listen:
                family, host, port = parse_address(text)
                sock = socket.socket(family, socket.SOCK_DGRAM)
                self.sockets.append(sock)
                if family == socket.AF_INET6:
                    # One socket per family: [::] and 0.0.0.0 can then both be given, on the same port.
                    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
                sock.bind((host, port))
                sock.setblocking(False)
            self.metrics_server: WSGIServer | None = None
            if metrics is not None:
                family, host, port = parse_address(metrics, default_port=0)
                registry = CollectorRegistry(auto_describe=False)
                registry.register(self.ledger)
                server_class = _MetricsServer6 if family == socket.AF_INET6 else _MetricsServer
                self.metrics_server = make_server(
                    host,
                    port,
                    make_wsgi_app(registry),
                    server_class=server_class,
                    handler_class=_QuietHandler,
                )
        except BaseException:
            self.close()
            raise

    @property
    def udp_addresses(self) -> list[tuple[str, int]]:
        """The (host, port) each UDP socket is bound to (the real port when 0 was asked for)."""
        return [sock.getsockname()[:2] for sock in self.sockets]

    @property
    def metrics_address(self) -> tuple[str, int] | None:
        if self.metrics_server is None:
            return None
        host, port = self.metrics_server.server_address[:2]
        return str(host), int(port)

    def serve(self) -> None:
        """Receive until ``stop()`` (or a signal handler calling it); then close everything."""
        metrics_thread = None
        if self.metrics_server is not None:
            metrics_thread = threading.Thread(
                target=self.metrics_server.serve_forever, name="firefly-metrics", daemon=True
            )
            metrics_thread.start()
        selector = selectors.DefaultSelector()
        for sock in self.sockets:
            selector.register(sock, selectors.EVENT_READ)
        log.info(
            "fireflies on udp %s; metrics on http %s",
            ", ".join(f"{h}:{p}" for h, p in self.udp_addresses),
            "{}:{}".format(*self.metrics_address) if self.metrics_address else "(none)",
        )
        try:
            while not self._stopping.is_set():
                for key, _ in selector.select(timeout=0.2):
                    self._drain(key.fileobj)  # type: ignore[arg-type]
        finally:
            selector.close()
            if self.metrics_server is not None:
                self.metrics_server.shutdown()
            if metrics_thread is not None:
                metrics_thread.join(timeout=5)
            self.close()
            ledger = self.ledger
            log.info(
                "stopped: %d datagrams received, %d accepted, %d open flows, %d evicted",
                ledger.received,
                ledger.accepted,
                ledger.open_flows,
                ledger.evicted,
            )

    def _drain(self, sock: socket.socket) -> None:
        """Read what is waiting on ``sock`` (at most a batch, so that a flood on one socket does not starve
        the others or the stop)."""
        for _ in range(1024):
            try:
                # One byte more than the cap: a datagram that fills it was larger, and is dropped as such.
                datagram = sock.recv(MAX_DATAGRAM_BYTES + 1)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # e.g. ICMP errors reported on the socket; nothing to do but go on
                log.debug("recv: %s", exc)
                return
            self.ledger.receive(datagram)

    def start(self) -> FireflyCollector:
        """Serve on a thread of its own (tests, or a host process); ``stop()`` ends it."""
        self._thread = threading.Thread(target=self.serve, name="firefly-collector", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """End ``serve``: at once when it runs on this thread (a signal handler), else wait for its thread."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                raise RuntimeError("the firefly collector did not stop")
            self._thread = None

    def close(self) -> None:
        for sock in self.sockets:
            sock.close()
        server = getattr(self, "metrics_server", None)
        if server is not None:
            server.server_close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m monitoring.fireflies", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--listen",
        action="append",
        required=True,
        help="UDP host:port (or [v6]:port) to receive fireflies on; repeat for IPv4 and IPv6",
    )
    parser.add_argument("--metrics", help="HTTP host:port of /metrics (none: no metrics server)")
    parser.add_argument(
        "--max-open-flows", type=int, default=65536, help="open flows kept (LRU), default %(default)s"
    )
    parser.add_argument(
        "--max-label-sets",
        type=int,
        default=512,
        help="distinct (experiment, activity) pairs labelled; beyond: 'other'. Default %(default)s",
    )
    parser.add_argument(
        "--receive-buffer", type=int, default=4 << 20, help="SO_RCVBUF bytes, default %(default)s"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if os.geteuid() == 0:
        print(
            "the firefly collector does not run as root: start it as an unprivileged account "
            "(e.g. runuser -u srcnet -- ...)",
            file=sys.stderr,
        )
        return 2
    try:
        collector = FireflyCollector(
            args.listen,
            ledger=FlowLedger(max_open_flows=args.max_open_flows, max_label_sets=args.max_label_sets),
            metrics=args.metrics,
            receive_buffer=args.receive_buffer,
        )
    except (OSError, ValueError) as exc:
        print(f"cannot start: {exc}", file=sys.stderr)
        return 1
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: collector.stop())
    collector.serve()
    return 0
