"""The README's main job, as a newcomer runs it (non-interactive form), in a state folder of its own.

Every test runs the real demo as a separate process; the state folders (``demo-ci-*``) are reused between
runs, so only the first run of a session pays for creating the database cluster and the CA."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pytest

from localnet.processes import is_alive, port_open
from localnet.state import PROJECT_ROOT, StateDir

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module", autouse=True)
def one_demo_at_a_time() -> None:
    """The demos of this module share their state folders (``demo-ci-embedded`` serves three): a module-wide
    fixture makes the module one pytest-xdist group (tests/conftest.py), so that two workers never run two
    demos in one state at once (the second re-imports the topology under the first one's copies)."""


# The test run's own settings, not the demo's (the state root stays: it says where state folders live).
PRIVATE = ("SRCNET_STATE", "SRCNET_DB", "SRCNET_CELERY", "SRCNET_DEMO")
ROW = re.compile(r"^ska1-(low|mid)-obs-")


def run_demo(
    state_name: str, *args: str, env: dict[str, str] | None = None, timeout: float = 450.0
) -> subprocess.CompletedProcess[str]:
    """Run the demo to its end. One that has not exited after ``timeout`` seconds is stopped as Ctrl-C
    stops it (so it stops every process it started) and the test fails; both stay within pytest's limit."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(PRIVATE) or k == "SRCNET_STATE_ROOT"}
    argv = [sys.executable, "-m", "localnet", "demo", "--state", state_name, *args]
    proc = subprocess.Popen(
        argv,
        env={**base, **(env or {})},
        cwd=PROJECT_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
        pytest.fail(f"the demo was still running after {timeout:.0f} s; stopped it:\n{err[-3000:]}")
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def summary_rows(stdout: str) -> list[str]:
    return [line.rstrip() for line in stdout.splitlines() if ROW.match(line)]


def assert_everything_stopped(state_name: str) -> None:
    state = StateDir.named(state_name)
    runtime = state.read_runtime()
    assert not [p for p in (state.path / "pids").glob("*.pid") if is_alive(int(p.read_text() or 0))]
    assert not [name for name, port in runtime["ports"].items() if port_open(int(port))]


@pytest.mark.parametrize("mode", ["embedded", "rucio"])
def test_demo_pushes_every_product_and_stops_everything(mode):
    """The embedded run is asked for in the documented environment form (SRCNET_DEMO_ONCE=1 makes the demo
    exit after the summary, else it would run until interrupted and the subprocess time out;
    SRCNET_DEMO_PRODUCTS sets the products), the Rucio run with the options."""
    state_name = f"demo-ci-{mode}"
    if mode == "embedded":
        proc = run_demo(state_name, env={"SRCNET_DEMO_ONCE": "1", "SRCNET_DEMO_PRODUCTS": "1"})
        assert "running; Ctrl-C stops" not in proc.stderr
    else:
        proc = run_demo(state_name, "--once", "--products", "1", "--rucio")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = summary_rows(proc.stdout)
    # One product per telescope, two files each, every one verified at both ends.
    assert len(rows) == 4, proc.stdout
    assert all(line.endswith(" ok") for line in rows), proc.stdout
    assert "portal:  https://127.0.0.1:" in proc.stdout and "/api/schema/" in proc.stdout
    # Its web server offers single sign-on at the state's issuer (its own answer, asked by the demo).
    assert re.search(r"the portal and the CLI sign on at https://127\.0\.0\.1:\d+/realms/srcnet", proc.stderr)
    assert "srcnet auth login  (as 'alice')" in proc.stdout
    # The worker and the web server ran as the unprivileged service account, never as root.
    if os.geteuid() == 0:
        assert re.search(r"celery worker pid \d+ \(as srcnet\)", proc.stderr), proc.stderr[-3000:]
        assert re.search(r"web on 127\.0\.0\.1:\d+ pid \d+ \(as srcnet\)", proc.stderr), proc.stderr[-3000:]
    if mode == "rucio":
        # Rucio's conveyor asked the demo's issuer for its tokens, as it asks SKA-IAM: one to authenticate
        # with the FTS3 service, one per end of each copy (docs/tokens.md, "Rucio mode").
        submitter = StateDir.named(state_name).path / "log" / "rucio.conveyor-submitter.log"
        assert "Using a token to authenticate with FTS instance" in submitter.read_text(), submitter
    # Everything it started is stopped again.
    assert_everything_stopped(state_name)


def test_demo_once_exits_non_zero_when_a_product_fails():
    """--fail-one deletes the first product's second file from the SDP storage before the push: its copy
    fails for real (missing source, after the retries), the product ends FAILED, and --once says so."""
    state_name = "demo-ci-embedded"
    proc = run_demo(state_name, "--once", "--products", "1", "--fail-one")
    assert proc.returncode == 1, proc.stderr[-3000:]
    rows = summary_rows(proc.stdout)
    assert len(rows) == 4, proc.stdout
    broken = [line for line in rows if not line.endswith(" ok")]
    # Only the deleted file failed; the other three (its sibling included) arrived verified.
    assert len(broken) == 1 and broken[0].startswith("ska1-low-obs-"), proc.stdout
    assert ".part1.ms" in broken[0] and "FAILED" in broken[0] and "SOURCE" in broken[0], broken[0]
    assert "1 product(s) FAILED" in proc.stderr
    # The summary and the URLs are still printed, and everything is stopped.
    assert "portal:  https://127.0.0.1:" in proc.stdout
    assert_everything_stopped(state_name)
