"""Helpers shared by the WAN emulator tests (iperf3 runs, port probes)."""

import json
import subprocess
import sys
import time


def iperf3_tcp(path, seconds: int, extra=()) -> dict:
    """One iperf3 TCP flow A -> B (server without -1: the port probe would
    use up its single test); returns the client JSON (with the
    server's own receiver-side intervals under 'server_output_json')."""
    port = "5201"
    srv = path.popen_b(
        ["iperf3", "-s", "-J", "-p", port], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_port(path, "b", int(port))
        rtt_s = path.config.rtt_ms / 1e3
        out = path.run_a(
            ["iperf3", "-c", path.ip_b, "-p", port, "-t", str(seconds), "-J", "--get-server-output", *extra],
            capture_output=True,
            text=True,
            timeout=seconds + 20 + 10 * rtt_s,
        )
        ok = out.returncode == 0 and "error" not in out.stdout[-3000:]
        assert ok, out.stdout[-2000:] + out.stderr[-2000:]
        return json.loads(out.stdout)
    finally:
        srv.kill()
        srv.wait()


def wait_port(path, side: str, port: int, timeout: float = 10.0) -> None:
    """Wait until a TCP port listens, probing on loopback inside `side`."""
    code = "import socket,sys\nsocket.create_connection(('127.0.0.1', int(sys.argv[1])), 0.5).close()\n"
    run = path.run_a if side == "a" else path.run_b
    deadline = time.monotonic() + timeout
    while run([sys.executable, "-c", code, str(port)], capture_output=True, timeout=10).returncode != 0:
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
