"""The lock that keeps a measuring test alone on the machine while the suite runs in two xdist workers
(tests/worker_stack.py): shared holders run together, an exclusive one runs alone, and a waiting exclusive
holder is let in before a shared one that asks after it."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from tests.worker_stack import machine_lock


def _run_holders(tmp_path: Path, holders: list[tuple[str, bool, float]]) -> dict[str, tuple[float, float]]:
    """Start each holder (name, exclusive, seconds held) 0.1 s after the one before; when each held the
    machine, by name."""
    files = (tmp_path / "turnstile", tmp_path / "machine")
    spans: dict[str, tuple[float, float]] = {}

    def hold(name: str, exclusive: bool, seconds: float) -> None:
        with machine_lock(*files, exclusive=exclusive):
            began = time.monotonic()
            time.sleep(seconds)
            spans[name] = (began, time.monotonic())

    threads = []
    for holder in holders:
        threads.append(threading.Thread(target=hold, args=holder))
        threads[-1].start()
        time.sleep(0.1)
    for thread in threads:
        thread.join(10)
    return spans


def test_shared_holders_overlap_and_an_exclusive_one_runs_alone(tmp_path: Path) -> None:
    spans = _run_holders(
        tmp_path, [("shared-1", False, 0.6), ("shared-2", False, 0.6), ("exclusive", True, 0.3)]
    )
    assert spans["shared-2"][0] < spans["shared-1"][1], "two shared holders ran one after the other"
    for shared in ("shared-1", "shared-2"):
        assert spans["exclusive"][0] >= spans[shared][1], f"the exclusive holder overlapped {shared}"


def test_a_waiting_exclusive_holder_goes_before_a_later_shared_one(tmp_path: Path) -> None:
    spans = _run_holders(tmp_path, [("running", False, 0.5), ("exclusive", True, 0.3), ("later", False, 0.1)])
    assert spans["running"][1] <= spans["exclusive"][0]
    assert spans["exclusive"][1] <= spans["later"][0], (
        "a shared holder got in ahead of the waiting exclusive one"
    )
