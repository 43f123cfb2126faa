"""Emulator fidelity: the RTT of an idle path within 2 % of its setting (the issue's tolerance).

Runs after the other suites, alone on the machine (scripts/test.sh, AFTER): at 7.5 ms the tolerance is
0.15 ms, less than what a neighbour's load moves the path's fixed cost, and the workers' `exclusive` mark
keeps only the other worker away, not the pytest process that runs beside them (CI, 2026-11-29: the
7.5 ms case found fewer than three undisturbed bring-ups of eight while the Rucio and demo tests ran).
"""

import statistics

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
