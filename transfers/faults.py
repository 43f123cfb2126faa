"""Fault-injection points: places in the copy path where a test can make the process die for real.

``SRCNET_FAULT_POINTS`` lists point names (comma-separated); a process that reaches a listed point kills
itself with SIGKILL, exactly as a host that loses power would stop it. Unset (production), a point costs a
dictionary look-up. Used by tests/faults to prove that nothing is lost whatever instant a worker dies at."""

from __future__ import annotations

import os
import signal

AFTER_COPY = "after_copy"  # the bytes are at the destination, the outcome is not yet recorded


def reach(point: str) -> None:
    if point in os.environ.get("SRCNET_FAULT_POINTS", "").split(","):
        os.kill(os.getpid(), signal.SIGKILL)
