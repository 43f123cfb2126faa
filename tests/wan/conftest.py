"""Shared helpers for the WAN emulator tests (standard library + pytest).

The tests need root (network namespaces, TUN): they fail, never skip, when
that is missing, because a skipped fidelity test proves nothing.
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WAN = os.path.join(REPO, "bench", "wan")
sys.path.insert(0, WAN)

import wanpath  # noqa: E402

# Every test is bounded: SIGALRM raises inside the test, so context managers
# still tear their paths down.  Generous compared with the expected run time.
TEST_TIMEOUT_S = 90


class TestTimeout(Exception):
    pass


@pytest.fixture(autouse=True)
def _bounded():
    def on_alarm(signum, frame):
        raise TestTimeout(f"test exceeded {TEST_TIMEOUT_S} s")
    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(TEST_TIMEOUT_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture(scope="session", autouse=True)
def _prerequisites():
    assert os.geteuid() == 0, "tests/wan needs root (netns, TUN, sysctls)"
    assert os.path.exists("/dev/net/tun"), "/dev/net/tun missing"
    wanpath.build_emulator()


@pytest.fixture(autouse=True)
def _no_leftovers():
    """After each test nothing of this process's paths may remain."""
    yield
    mine = f"{wanpath.PREFIX}{os.getpid()}"
    left = [ns for ns in wanpath.list_namespaces() if ns.startswith(mine)]
    assert not left, f"namespaces left behind: {left}"


def iperf3_tcp(path, seconds: int, extra=()) -> dict:
    """One iperf3 TCP flow A -> B (server without -1: the port probe would
    use up its single test); returns the client JSON (with the
    server's own receiver-side intervals under 'server_output_json')."""
    port = "5201"
    srv = path.popen_b(["iperf3", "-s", "-J", "-p", port], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    try:
        wait_port(path, "b", int(port))
        rtt_s = path.config.rtt_ms / 1e3
        out = path.run_a(["iperf3", "-c", path.ip_b, "-p", port, "-t", str(seconds), "-J",
                          "--get-server-output", *extra], capture_output=True, text=True,
                         timeout=seconds + 20 + 10 * rtt_s)
        assert out.returncode == 0 and "error" not in out.stdout[-3000:], out.stdout[-2000:] + out.stderr[-2000:]
        return json.loads(out.stdout)
    finally:
        srv.kill()
        srv.wait()


def wait_port(path, side: str, port: int, timeout: float = 10.0) -> None:
    """Wait until a TCP port listens, probing on loopback inside `side`."""
    code = ("import socket,sys\n"
            "socket.create_connection(('127.0.0.1', int(sys.argv[1])), 0.5).close()\n")
    run = path.run_a if side == "a" else path.run_b
    deadline = time.monotonic() + timeout
    while run([sys.executable, "-c", code, str(port)], capture_output=True,
              timeout=10).returncode != 0:
        assert time.monotonic() < deadline, f"port {port} never opened in {side}"
        time.sleep(0.05)


def receiver_rate_bps(result: dict, skip_s: float) -> float:
    """Receiver-side goodput over the intervals that start after skip_s."""
    ivals = result["server_output_json"]["intervals"]
    tail = [i["sum"] for i in ivals if i["sum"]["start"] >= skip_s - 1e-6]
    assert tail, "no steady-state intervals"
    return sum(i["bytes"] for i in tail) * 8 / sum(i["seconds"] for i in tail)


def tcp_payload_fraction(mtu: int) -> float:
    """TCP payload per IP byte for full segments (20 IP + 20 TCP + 12 timestamps)."""
    return (mtu - 52) / mtu
