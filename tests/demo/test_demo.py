"""The README's main job, as a newcomer runs it (non-interactive form), in a state folder of its own."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from localnet.processes import is_alive, port_open
from localnet.state import PROJECT_ROOT, StateDir

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("mode", ["embedded", "rucio"])
def test_demo_pushes_every_product_and_stops_everything(mode):
    state_name = f"demo-ci-{mode}"
    private = ("SRCNET_STATE", "SRCNET_DB", "SRCNET_CELERY")  # the test run's own settings, not the demo's
    env = {k: v for k, v in os.environ.items() if not k.startswith(private)}
    argv = [sys.executable, "-m", "localnet", "demo", "--once", "--state", state_name, "--products", "1"]
    if mode == "rucio":
        argv.append("--rucio")
    proc = subprocess.run(argv, env=env, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [line for line in proc.stdout.splitlines() if re.match(r"^ska1-(low|mid)-obs-", line)]
    # One product per telescope, two files each, every one verified at both ends.
    assert len(rows) == 4, proc.stdout
    assert all(line.rstrip().endswith(" ok") for line in rows), proc.stdout
    assert "portal:  http://127.0.0.1:" in proc.stdout and "/api/schema/" in proc.stdout
    # Everything it started is stopped again.
    state = StateDir.named(state_name)
    runtime = state.read_runtime()
    assert not [p for p in (state.path / "pids").glob("*.pid") if is_alive(int(p.read_text() or 0))]
    assert not [name for name, port in runtime["ports"].items() if port_open(int(port))]
