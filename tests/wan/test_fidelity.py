"""Emulator fidelity: delivered rate, loss rate, queue bound (RTT at idle: test_idle_rtt.py).

Short runs at modest rates; each asserts the property it is named after
against the setting, with tolerances from the issue (RTT 2 %, rate 5 %).
"""

import json
import math
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from wanpath import emulated_path, measure_rtt

from tests.wan.helpers import iperf3_tcp, receiver_rate_bps, tcp_payload_fraction, wait_port

# Each test measures the emulator's timing or rate: alone on the machine (tests/worker_stack.py).
pytestmark = pytest.mark.exclusive

# The 2 vCPUs are shared with other work.  A measurement taken while a
# neighbour saturates them is not an idle measurement: such runs are
# recognised (RTT spread, emulator lateness counters) and repeated, at most
# ATTEMPTS times; if none was undisturbed the test fails and says so.
ATTEMPTS = 3


def _delivered_bps(path, seconds, skip_s):
    """Run one iperf3 flow A->B; return (iperf3 result, IP-layer rate the
    bottleneck delivered between skip_s and the end of sending, from the
    emulator's own counters and timestamps, and the counters around the run)."""
    with ThreadPoolExecutor(1) as ex:
        before = path.stats()
        fut = ex.submit(iperf3_tcp, path, seconds)
        time.sleep(skip_s + 0.7)  # iperf3 start-up + port probe ~0.5 s
        s0 = path.stats()
        time.sleep(seconds - skip_s - 1.0)
        s1 = path.stats()
        res = fut.result()
        after = path.stats()
    rate = (s1["ab"]["tx_bytes"] - s0["ab"]["tx_bytes"]) * 8 / ((s1["mono_ns"] - s0["mono_ns"]) / 1e9)
    return res, rate, before, after, s0, s1


def _check_rate(rtt_ms, rate_mbit, seconds, skip_s):
    with emulated_path(rtt_ms=rtt_ms, rate_mbit=rate_mbit) as path:
        for _ in range(ATTEMPTS):
            res, delivered, before, after, s0, s1 = _delivered_bps(path, seconds, skip_s)
            # valid run: the emulator released every data packet within
            # 10 ms of its due time during the measured window
            if s1["ab"]["late_gt10ms"] == s0["ab"]["late_gt10ms"]:
                break
        else:
            pytest.fail(f"emulator was stalled >10 ms in all {ATTEMPTS} runs: {after['ab']}")
    # Delivered rate at the bottleneck's output (IP bytes, the unit of the
    # setting) over the steady part of a long TCP flow.  Not the receiver's
    # read rate over a window: at 300 ms data waiting behind a retransmission
    # hole reaches the application in bursts, which skews any short window.
    setting = rate_mbit * 1e6
    assert abs(delivered - setting) <= 0.05 * setting, (delivered, setting)
    # The TCP flow used the path: iperf3's receiver-side goodput from skip_s
    # to the end is close to the payload share of the setting.  Below it by
    # what CUBIC's sawtooth and retransmissions cost (these use delivered
    # capacity too), above it by at most a hole's worth of data released in
    # a burst at the window start; far above would mean traffic bypassed
    # the emulator.
    goodput = receiver_rate_bps(res, skip_s)
    ceiling = setting * tcp_payload_fraction(1500)
    assert 0.85 * ceiling <= goodput <= 1.10 * ceiling, (goodput, ceiling)
    # Whatever TCP retransmitted was dropped by the model (queue overflow or
    # loss) and nowhere else: no hidden drops outside the emulator.  iperf3
    # reads its counter when the test ends, so drops of the last round trips
    # may not be retransmitted yet: allow 2 % of them, and every drop after
    # the last snapshot taken while the flow ran (s1, under a second before
    # its end: at 300 ms a loss event there is retransmitted after iperf3
    # has read its counter).
    ab = {k: after["ab"][k] - before["ab"][k] for k in after["ab"] if isinstance(after["ab"][k], int)}
    retrans = res["end"]["sum_sent"]["retransmits"]
    drops = ab["drop_queue"] + ab["drop_loss"]
    late_drops = sum(after["ab"][k] - s1["ab"][k] for k in ("drop_queue", "drop_loss"))
    assert retrans <= drops <= retrans + max(3, 0.02 * drops) + late_drops, (retrans, late_drops, ab)
    assert after["ab"]["drop_ring"] == 0 and after["ab"]["tx_err"] == 0
    assert after["ab"]["backlog_max"] <= after["ab"]["queue_limit"]


def test_rate_long_flow_200mbit_56ms():
    _check_rate(rtt_ms=56, rate_mbit=200, seconds=6, skip_s=2)


def test_rate_long_flow_50mbit_300ms():
    _check_rate(rtt_ms=300, rate_mbit=50, seconds=10, skip_s=5)


def udp_receive_buffer_errors(path):
    """Datagrams B's kernel dropped because a socket's receive buffer was full (a host's
    loss, not the path's), from /proc/net/snmp in B's namespace."""
    lines = [
        line.split()
        for line in path.run_b(
            ["cat", "/proc/net/snmp"], capture_output=True, text=True, timeout=10
        ).stdout.splitlines()
        if line.startswith("Udp:")
    ]
    return int(dict(zip(lines[0][1:], lines[1][1:], strict=True))["RcvbufErrors"])


def test_random_loss_rate_matches_setting():
    loss = 0.02
    # Both iperf3 ends run SCHED_FIFO: under a busy neighbour a normal
    # priority UDP receiver overflows its socket buffer, and those losses
    # are not the emulator's.
    rt = ["chrt", "-f", "5"]
    with emulated_path(rtt_ms=7.5, rate_mbit=100, loss=loss, seed=7) as path:
        port = "5202"
        srv = path.popen_b(
            [*rt, "iperf3", "-s", "-p", port], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            wait_port(path, "b", int(port))
            before = path.stats()["ab"]
            overflows_before = udp_receive_buffer_errors(path)
            out = path.run_a(
                [
                    *rt,
                    "iperf3",
                    "-c",
                    path.ip_b,
                    "-p",
                    port,
                    "-u",
                    "-b",
                    "20M",
                    "-l",
                    "1400",
                    "-t",
                    "3",
                    "-J",
                ],
                capture_output=True,
                text=True,
                timeout=30,
            )
            after = path.stats()["ab"]
            overflows = udp_receive_buffer_errors(path) - overflows_before
        finally:
            srv.kill()
            srv.wait()
    assert out.returncode == 0, out.stdout[-1000:]
    udp = json.loads(out.stdout)["end"]["sum"]
    sent, lost = udp["packets"], udp["lost_packets"]
    dropped = after["drop_loss"] - before["drop_loss"]
    offered = after["rx_segs"] - before["rx_segs"]
    # The model's loss rate: binomial tolerance, 4 standard deviations.
    tol = 4 * math.sqrt(loss * (1 - loss) / offered)
    assert abs(dropped / offered - loss) <= tol, (dropped, offered)
    # End to end: the receiver lost what the model dropped, and nothing else
    # on the path, up to 2 (the emulator's count includes any lost control
    # packet; iperf3 counts a datagram still in flight when the test ends as
    # lost). Datagrams B's own kernel dropped for a full receive buffer (seen
    # once in CI despite SCHED_FIFO) are the host's loss, counted apart.
    assert abs((lost - overflows) / sent - loss) <= tol, (lost, overflows, sent)
    assert abs(lost - overflows - dropped) <= 2, (lost, overflows, dropped)


def test_queue_is_bounded_and_drops_are_retransmitted():
    qbytes = 100_000
    rate_mbit, rtt_ms = 100, 56
    with emulated_path(rtt_ms=rtt_ms, rate_mbit=rate_mbit, queue_bytes=qbytes) as path:
        with ThreadPoolExecutor(1) as ex:
            # RTT probes share the A->B queue with the TCP flow, so they
            # see the queueing delay the buffer allows.
            fut = ex.submit(iperf3_tcp, path, 5)
            time.sleep(2)
            loaded = measure_rtt(path, count=60, interval_s=0.03)
            res = fut.result()
        st = path.stats()["ab"]
    assert st["queue_limit"] == qbytes
    # The queue reached its limit and never exceeded it.
    assert 0.9 * qbytes <= st["backlog_max"] <= qbytes, st
    # A 100 kB buffer is 1/7 BDP: CUBIC must overflow it, and each overflow
    # drop comes back as exactly one retransmitted segment. The RTT probes
    # share the queue: a probe that met it full was dropped too, and nothing
    # retransmits it (a whole run saw 217 drops for 211 retransmits).
    assert st["drop_queue"] > 0
    retrans = res["end"]["sum_sent"]["retransmits"]
    probes_lost = loaded["count"] - loaded["received"]
    slack = max(3, 0.02 * retrans)
    assert retrans <= st["drop_queue"] <= retrans + probes_lost + slack, (retrans, probes_lost, st)
    # Queueing delay never exceeds what the buffer holds at the bottleneck
    # (8 ms here): the median probe under load stays within RTT + 8 ms + 1 ms
    # of timer jitter.  That the queue did fill is asserted from the
    # emulator's own backlog above: whether a probe meets the queue at its
    # peak depends on where in CUBIC's sawtooth it lands (seen both ways).
    qdelay_ms = qbytes * 8 / (rate_mbit * 1e6) * 1e3
    assert loaded["median_ms"] <= rtt_ms + qdelay_ms + 1, loaded
