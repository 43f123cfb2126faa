"""Emulator fidelity: RTT at idle, delivered rate, loss rate, queue bound.

Short runs at modest rates; each asserts the property it is named after
against the setting, with tolerances from the issue (RTT 2 %, rate 5 %).
"""

import json
import math
import statistics
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from wanpath import CpuLoad, emulated_path, fixed_cost_now, measure_rtt, rtt_is_quiet

from tests.wan.helpers import iperf3_tcp, receiver_rate_bps, tcp_payload_fraction, wait_port

# Each test measures the emulator's timing or rate: alone on the machine (tests/worker_stack.py).
pytestmark = pytest.mark.exclusive

# The 2 vCPUs are shared with other work.  A measurement taken while a
# neighbour saturates them is not an idle measurement: such runs are
# recognised (RTT spread, emulator lateness counters) and repeated, at most
# ATTEMPTS times; if none was undisturbed the test fails and says so.
ATTEMPTS = 3

# Idle RTT: the path's fixed cost (veth, TUN and vCPU wake-ups, 0.4-0.8 ms)
# is calibrated at bring-up and moves with the machine's load by up to
# ~0.2 ms without extra jitter.  Where the 2 % tolerance is smaller than that
# swing (7.5 ms: 0.15 ms), a quiet spread is not enough to call the machine
# idle, so it is checked directly as well: other work (including steal time,
# i.e. other guests on the host, and the kernel still tearing down an earlier
# path's namespaces) kept the CPUs at most IDLE_CPU_BUSY busy while the fixed
# cost was calibrated and while the RTT was measured.  More attempts than elsewhere, because
# each is short (~3 s) and a busy moment passes.
IDLE_CPU_BUSY = 0.25
LOAD_SWING_MS = 0.5
IDLE_ATTEMPTS = 6
# And on such a path the fixed cost is measured again after the RTT: an attempt whose cost moved by more
# than this since bring-up was disturbed (a CI run saw 7.67 ms at 7.5 with the CPUs under a quarter busy).
# Two calibrations on the idle VM differ by 0.04-0.09 ms (the median of 50 probes), hence not less.
STEADY_COST_MS = 0.1
SHORT_PATH_BRING_UPS = 3


@pytest.mark.parametrize("rtt_ms", [7.5, 56.0, 300.0])
def test_idle_rtt_within_2_percent(rtt_ms):
    count = 60 if rtt_ms < 100 else 12
    short = 0.02 * rtt_ms < LOAD_SWING_MS
    # On a short path one bring-up's calibration can be off by the whole tolerance (CI saw 7.67 and 7.33 ms
    # at 7.5 from undisturbed attempts): the figure is the median of SHORT_PATH_BRING_UPS bring-ups there.
    wanted = SHORT_PATH_BRING_UPS if short else 1
    seen, undisturbed = [], []
    for _ in range(IDLE_ATTEMPTS + wanted - 1):
        # new path each time: the bring-up calibration must be quiet too
        with emulated_path(rtt_ms=rtt_ms, rate_mbit=100) as path:
            load = CpuLoad().start()
            r = measure_rtt(path, count=count, interval_s=0.02)
            r["cpu_busy"] = round(load.stop(), 3)
            r["calibration_cpu_busy"] = path.calibration_cpu_busy
            r["fixed_cost_ms"] = path.config.overhead_ms
            if short:
                r["fixed_cost_after_ms"] = fixed_cost_now(path)
        seen.append(r)
        busy = max(r["cpu_busy"], r["calibration_cpu_busy"] or 0.0)
        idle_cpu = not short or busy <= IDLE_CPU_BUSY
        steady = not short or abs(r["fixed_cost_after_ms"] - r["fixed_cost_ms"]) <= STEADY_COST_MS
        if rtt_is_quiet(r) and idle_cpu and steady:
            undisturbed.append(r)
            if len(undisturbed) == wanted:
                break
    else:
        pytest.fail(f"{len(undisturbed)} undisturbed RTT measurements of {wanted} wanted: {seen}")
    assert all(r["received"] == count for r in undisturbed)
    median = statistics.median(r["median_ms"] for r in undisturbed)
    assert abs(median - rtt_ms) <= 0.02 * rtt_ms, undisturbed
    # The emulator never delivers early: even the fastest probe took the RTT
    # minus the calibrated fixed cost.
    for r in undisturbed:
        assert r["min_ms"] >= rtt_ms - r["fixed_cost_ms"], r


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
    assert abs(lost / sent - loss) <= tol, (lost, sent)
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
    # drop comes back as exactly one retransmitted segment.
    assert st["drop_queue"] > 0
    retrans = res["end"]["sum_sent"]["retransmits"]
    assert retrans <= st["drop_queue"] <= retrans + max(3, 0.02 * retrans), (retrans, st)
    # Queueing delay never exceeds what the buffer holds at the bottleneck
    # (8 ms here): the median probe under load stays within RTT + 8 ms + 1 ms
    # of timer jitter.  That the queue did fill is asserted from the
    # emulator's own backlog above: whether a probe meets the queue at its
    # peak depends on where in CUBIC's sawtooth it lands (seen both ways).
    qdelay_ms = qbytes * 8 / (rate_mbit * 1e6) * 1e3
    assert loaded["median_ms"] <= rtt_ms + qdelay_ms + 1, loaded
