"""A process that made a gfal2 context can still be stopped (transfers/gfal_context.py)."""

from __future__ import annotations

import signal
import subprocess
import sys

from localnet.state import PROJECT_ROOT

# The child makes a context as a copy does, says so, then waits to be stopped.
CHILD = """
import signal, sys, time
from transfers.gfal_context import new_context
ctx = new_context()
print(sorted(getattr(s, "name", str(s)) for s in signal.pthread_sigmask(signal.SIG_BLOCK, ())), flush=True)
time.sleep(60)
"""


def test_a_process_with_a_gfal2_context_stops_on_sigterm_and_blocks_nothing() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD], cwd=PROJECT_ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "[]"
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=10) == -signal.SIGTERM
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
