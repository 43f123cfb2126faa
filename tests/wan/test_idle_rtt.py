"""Emulator fidelity: the RTT of an idle path within 2 % of its setting (the issue's tolerance).

Runs after the other suites, alone on the machine (scripts/test.sh, AFTER): at 7.5 ms the tolerance is
0.15 ms, less than what a neighbour's load moves the path's fixed cost, and the workers' `exclusive` mark
keeps only the other worker away, not the pytest process that runs beside them (CI, 2026-11-29: the
7.5 ms case found fewer than three undisturbed bring-ups of eight while the Rucio and demo tests ran).
"""

import json
import statistics
import time
from pathlib import Path

import pytest
from wanpath import CpuLoad, emulated_path, fixed_cost_now, measure_rtt, rtt_is_quiet

pytestmark = pytest.mark.exclusive

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
# A busy moment on a shared host (steal time from other guests) can last longer than IDLE_ATTEMPTS short
# attempts (CI, 2026-11-29, stop 44: the 7.5 ms case failed in the AFTER phase, alone on the machine). On
# a short path the attempts go on for this long before the test gives up; each attempt's figures are
# written to test-artifacts/idle-rtt-<ms>.json so that a failure can be read, not guessed.
SHORT_PATH_WINDOW_S = 75.0
# The emulator, the probe and its echo on one CPU: on this VM a wake-up across CPUs costs a variable
# inter-processor interrupt, which halves the fixed cost's spread between bring-ups (0.061 -> 0.028 ms
# sd at 7.5 ms, docs/benchmarks/idle-rtt.md). Free-running, three idle bring-ups' median was
# 0.2 ms off in one run of six on an idle machine.
PROBE_CPU = 0
EVIDENCE = Path(__file__).resolve().parents[2] / "test-artifacts"


def _keep_evidence(rtt_ms: float, seen: list[dict]) -> None:
    EVIDENCE.mkdir(exist_ok=True)
    (EVIDENCE / f"idle-rtt-{rtt_ms:g}.json").write_text(json.dumps(seen, indent=1, default=str))


def _summary(r: dict) -> str:
    keys = ("median_ms", "min_ms", "cpu_busy", "calibration_cpu_busy", "fixed_cost_ms", "fixed_cost_after_ms")
    return " ".join(f"{k}={r.get(k)}" for k in keys)


@pytest.mark.parametrize("rtt_ms", [7.5, 56.0, 300.0])
def test_idle_rtt_within_2_percent(rtt_ms):
    count = 60 if rtt_ms < 100 else 12
    short = 0.02 * rtt_ms < LOAD_SWING_MS
    # On a short path one bring-up's calibration can be off by the whole tolerance (CI saw 7.67 and 7.33 ms
    # at 7.5 from undisturbed attempts): the figure is the median of SHORT_PATH_BRING_UPS bring-ups there.
    wanted = SHORT_PATH_BRING_UPS if short else 1
    seen: list[dict] = []
    undisturbed: list[dict] = []
    deadline = time.monotonic() + (SHORT_PATH_WINDOW_S if short else 0.0)
    attempts = 0
    least = IDLE_ATTEMPTS + wanted - 1
    while len(undisturbed) < wanted and (attempts < least or time.monotonic() < deadline):
        attempts += 1
        # new path each time: the bring-up calibration must be quiet too
        # The probes on the emulator's CPU (PROBE_CPU): no wake-up crosses CPUs.
        with emulated_path(rtt_ms=rtt_ms, rate_mbit=100, cpu=PROBE_CPU) as path:
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
        r["undisturbed"] = rtt_is_quiet(r) and idle_cpu and steady
        if r["undisturbed"]:
            undisturbed.append(r)
    _keep_evidence(rtt_ms, seen)
    if len(undisturbed) < wanted:
        pytest.fail(
            f"{len(undisturbed)} undisturbed RTT measurements of {wanted} wanted in {attempts} attempts: "
            + "; ".join(_summary(r) for r in seen)
        )
    assert all(r["received"] == count for r in undisturbed)
    median = statistics.median(r["median_ms"] for r in undisturbed)
    assert abs(median - rtt_ms) <= 0.02 * rtt_ms, "; ".join(_summary(r) for r in undisturbed)
    # The emulator never delivers early: even the fastest probe took the RTT
    # minus the calibrated fixed cost.
    for r in undisturbed:
        assert r["min_ms"] >= rtt_ms - r["fixed_cost_ms"], r
