"""localnet/forwarder.py: the issuer's path into a namespace, here on loopback: a TCP port carried to a unix
socket and from it to a TCP server, as the WAN harness's sites reach their issuer (bench/wan/xrdsite.py)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from localnet.forwarder import parse_endpoint
from localnet.state import free_port

SCRIPT = Path(__file__).resolve().parents[2] / "localnet" / "forwarder.py"


@pytest.mark.parametrize(
    ("text", "endpoint"),
    [
        ("8443", ("127.0.0.1", 8443)),
        ("10.1.2.3:443", ("10.1.2.3", 443)),
        ("unix:/run/x.sock", ("/run/x.sock", None)),
    ],
)
def test_endpoints_are_read_as_written(text, endpoint):
    assert parse_endpoint(text) == endpoint


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("unix:relative.sock", "absolute path"),
        ("host:http", "not <address>:<port>"),
        ("1.2.3.4:70000", "not <"),
    ],
)
def test_a_bad_endpoint_is_refused_naming_it(text, says):
    with pytest.raises(ValueError, match=says):
        parse_endpoint(text)
    run = subprocess.run([sys.executable, str(SCRIPT), text, "127.0.0.1:1"], capture_output=True, text=True)
    assert run.returncode == 2 and text in run.stderr


@pytest.fixture
def echo_server() -> Iterator[int]:
    """A TCP server on loopback that sends back, upper-cased, what it receives."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                while data := conn.recv(65536):
                    conn.sendall(data.upper())

    threading.Thread(target=serve, daemon=True).start()
    yield port
    server.close()


def _start(*ends: str, log: Path) -> subprocess.Popen:
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, str(SCRIPT), *ends], stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 10
    while "forwarder: " not in log.read_text() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proc.poll() is None, log.read_text()
    return proc


def test_a_port_is_carried_through_a_unix_socket_to_a_tcp_server(tmp_path, echo_server):
    sock, port = tmp_path / "issuer.sock", free_port()
    procs = [_start(f"unix:{sock}", f"127.0.0.1:{echo_server}", log=tmp_path / "host.log")]
    try:
        procs.append(_start(str(port), f"unix:{sock}", log=tmp_path / "site.log"))
        assert oct(os.stat(sock).st_mode & 0o777) == "0o600"  # only the forwarders' account may use it
        for _ in range(2):  # one connection after another, each to the end
            with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
                payload = os.urandom(200_000).hex().encode()
                conn.sendall(payload)
                conn.shutdown(socket.SHUT_WR)
                got = b"".join(iter(lambda: conn.recv(65536), b""))
            assert got == payload.upper()
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(5)
