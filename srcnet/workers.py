"""How many copies the deployment's workers run at once, and the worker pool that runs them.

A copy (``transfers.execute_attempt``) holds a worker process for its whole duration, and so does every
control task (the push cycle, the dispatcher, the sweeps) while it runs. The dispatcher admits at most
``COPY_SLOTS`` copies at once (``SRCNET_COPY_SLOTS``, deployment-wide), and a worker runs that many
processes plus ``CONTROL_SLOTS``: so an admitted copy starts at once (its start time is its start, not a
wait for a process) and the control tasks are never queued behind copies. With fewer processes than
admitted copies, the copies beyond the pool wait in the broker while counted as running, and the link
limits a plan sets are not what runs (found by bench/scheduler/bench_reality.py, docs/benchmarks.md)."""

from __future__ import annotations

import os

DEFAULT_COPY_SLOTS = 12
CONTROL_SLOTS = 2


def copy_slots() -> int:
    """The deployment's ``SRCNET_COPY_SLOTS`` (its default when unset); not a positive integer: a
    ValueError naming the variable."""
    text = os.environ.get("SRCNET_COPY_SLOTS", str(DEFAULT_COPY_SLOTS))
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"SRCNET_COPY_SLOTS must be a positive whole number of copies, not {text!r}")
    return int(text)


def worker_concurrency(slots: int | None = None) -> int:
    """The processes of a worker that runs ``slots`` copies at once (default: ``copy_slots()``)."""
    return (copy_slots() if slots is None else slots) + CONTROL_SLOTS
