"""The platform's firefly collector: SciTags fireflies in (UDP, IPv4 and IPv6), Prometheus metrics out
(HTTP ``/metrics``), and the ended flows for the control plane to attribute (HTTP ``/flows``).

    python -m monitoring.fireflies --listen 0.0.0.0:10514 --listen [::]:10514 --metrics 127.0.0.1:9105 \
        --http-token-file /etc/srcnet/fireflies.token

It runs as an unprivileged account (it refuses root: 10514 needs no privilege) and stops cleanly on
SIGTERM or SIGINT: its sockets closed, its metrics server shut down, exit status 0."""

from __future__ import annotations

import argparse
import hmac
import json
import logging
import os
import selectors
import signal
import socket
import ssl
import sys
import threading
from socketserver import ThreadingMixIn
from typing import Any
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app

from .journal import DEFAULT_CAPACITY, FlowJournal
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


def _json(start_response: Any, status: str, body: dict[str, Any]) -> list[bytes]:
    data = json.dumps(body, separators=(",", ":")).encode()
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
    return [data]


def _query_int(query: dict[str, list[str]], name: str, default: int) -> int:
    values = query.get(name)
    if not values:
        return default
    text = values[-1]
    if not text.isdigit() or len(text) > 18:
        raise ValueError(name)
    return int(text)


def http_app(registry: CollectorRegistry, journal: FlowJournal, token: str | None = None) -> Any:
    """``/metrics`` (Prometheus) and ``/flows?after=N&limit=M`` (the journal, JSON); a bad parameter is a
    400 naming it. Every request must carry ``Authorization: Bearer <token>`` (else 401)."""
    if not token:
        raise ValueError("the HTTP server (/metrics, /flows) needs a bearer token (--http-token-file)")
    metrics = make_wsgi_app(registry)
    expected = f"Bearer {token}".encode()

    def app(environ: dict[str, Any], start_response: Any) -> Any:
        given = str(environ.get("HTTP_AUTHORIZATION", "")).encode()
        if not hmac.compare_digest(given, expected):
            data = b"a bearer token is required\n"
            headers = [("WWW-Authenticate", "Bearer"), ("Content-Type", "text/plain")]
            start_response("401 Unauthorized", [*headers, ("Content-Length", str(len(data)))])
            return [data]
        if environ.get("PATH_INFO") != "/flows":
            return metrics(environ, start_response)
        if environ.get("REQUEST_METHOD", "GET") != "GET":
            return _json(start_response, "405 Method Not Allowed", {"error": "only GET"})
        query = parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True)
        try:
            after = _query_int(query, "after", 0)
            limit = _query_int(query, "limit", 1000)
        except ValueError as exc:  # the message is the parameter's name
            return _json(start_response, "400 Bad Request", {str(exc): ["a whole number of 0 or more"]})
        page = journal.read(after, max(1, limit))
        return _json(
            start_response,
            "200 OK",
            {"epoch": page.epoch, "next_after": page.next_after, "missed": page.missed, "flows": page.flows},
        )

    return app


class _QuietHandler(WSGIRequestHandler):
    """No line per scrape in the log; a client that stalls (before or inside TLS) is let go."""

    timeout = 10

    def log_message(self, format: str, *args: object) -> None:
        pass


class _MetricsServer(ThreadingMixIn, WSGIServer):
    """A thread per request: a slow or stalled client (a TLS handshake that never ends) holds only its own."""

    address_family = socket.AF_INET
    daemon_threads = True


class _MetricsServer6(_MetricsServer):
    address_family = socket.AF_INET6


class FireflyCollector:
    """UDP sockets feeding a ``FlowLedger``, and optionally an HTTP server of its metrics."""

    def __init__(
        self,
        listen: list[str],
        *,
        ledger: FlowLedger | None = None,
        journal: FlowJournal | None = None,
        metrics: str | None = None,
        receive_buffer: int = 4 << 20,
        http_token: str | None = None,
        tls: tuple[str, str] | None = None,
    ) -> None:
        """``http_token``: the bearer token the HTTP server demands (required with ``metrics``: the journal
        holds the flows' addresses); ``tls``: (certificate, key) PEM files, the HTTP server then speaks
        HTTPS only."""
        if not listen:
            raise ValueError("at least one address to listen on")
        self.journal = journal or FlowJournal()
        self.ledger = ledger or FlowLedger()
        if self.ledger.on_flow_end is None:
            self.ledger.on_flow_end = self.journal.append
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
                    http_app(registry, self.journal, http_token),
                    server_class=server_class,
                    handler_class=_QuietHandler,
                )
                if tls is not None:
                    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
                    context.load_cert_chain(*tls)
                    # The handshake on the request's own thread (its first read), not in accept().
                    self.metrics_server.socket = context.wrap_socket(
                        self.metrics_server.socket, server_side=True, do_handshake_on_connect=False
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
        "--journal-size",
        type=int,
        default=DEFAULT_CAPACITY,
        help="ended flows kept for /flows (a ring), default %(default)s",
    )
    parser.add_argument(
        "--receive-buffer", type=int, default=4 << 20, help="SO_RCVBUF bytes, default %(default)s"
    )
    parser.add_argument(
        "--http-token-file",
        help="a file holding the bearer token every HTTP request must carry (required with --metrics)",
    )
    parser.add_argument("--tls-cert", help="PEM certificate: the HTTP server speaks HTTPS only")
    parser.add_argument("--tls-key", help="PEM key of --tls-cert")
    args = parser.parse_args(argv)
    if bool(args.tls_cert) != bool(args.tls_key):
        parser.error("--tls-cert and --tls-key go together")
    if args.metrics and not args.http_token_file:
        parser.error("--metrics needs --http-token-file: /metrics and /flows answer only with its token")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if os.geteuid() == 0:
        print(
            "the firefly collector does not run as root: start it as an unprivileged account "
            "(e.g. runuser -u srcnet -- ...)",
            file=sys.stderr,
        )
        return 2
    try:
        token = None
        if args.http_token_file:
            with open(args.http_token_file, encoding="utf-8") as handle:
                token = handle.read().strip()
            if not token:
                raise ValueError(f"--http-token-file {args.http_token_file}: the file is empty")
        collector = FireflyCollector(
            args.listen,
            ledger=FlowLedger(max_open_flows=args.max_open_flows, max_label_sets=args.max_label_sets),
            journal=FlowJournal(args.journal_size),
            metrics=args.metrics,
            receive_buffer=args.receive_buffer,
            http_token=token,
            tls=(args.tls_cert, args.tls_key) if args.tls_cert else None,
        )
    except (OSError, ValueError) as exc:
        print(f"cannot start: {exc}", file=sys.stderr)
        return 1
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: collector.stop())
    collector.serve()
    return 0
