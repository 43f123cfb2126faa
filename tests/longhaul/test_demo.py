"""`make demo` on the long-haul network (`make demo LONGHAUL=1` passes --long-haul; here the variable
SRCNET_DEMO_LONGHAUL=1): the whole reference topology's 18 sites in namespaces behind the emulator, a push
through it, everything stopped and removed at the end."""

from __future__ import annotations

import os

import pytest

from localnet.longhaul import CAPACITY_SCALE, current_network, network_name
from localnet.state import StateDir
from tests.demo.test_demo import assert_everything_stopped, run_demo, summary_rows

pytestmark = [pytest.mark.integration, pytest.mark.timeout(400)]


def test_the_demo_runs_on_the_long_haul_network_and_removes_it():
    # Of this test run's state: two runs on one machine (SRCNET_TEST_STATE) do not share a demo.
    state_name = f"demo-ci-longhaul-{os.environ.get('SRCNET_STATE', 'test')}"
    proc = run_demo(state_name, "--once", "--products", "1", env={"SRCNET_DEMO_LONGHAUL": "1"}, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "long-haul network: 18 sites in namespaces" in proc.stderr, proc.stderr[-3000:]
    rows = summary_rows(proc.stdout)
    assert len(rows) == 4 and all(line.endswith(" ok") for line in rows), proc.stdout
    # No copy beat the emulated capacity (100 Gbit/s / CAPACITY_SCALE): MB/s is the file's bytes per second.
    for line in rows:
        rate_mb_s = float(line.split()[6])
        assert rate_mb_s <= 100e9 / CAPACITY_SCALE / 8 / 1e6, line
    assert_everything_stopped(state_name)
    state = StateDir.named(state_name)
    assert current_network(state) is None
    from localnet.longhaul import wannet

    assert not [ns for ns in wannet().wanpath.list_namespaces() if ns.startswith(network_name(state))]
