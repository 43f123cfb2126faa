"""The lock that keeps a measuring test alone on the machine while the suite runs in two xdist workers
(tests/worker_stack.py): shared holders run together, an exclusive one runs alone, and a waiting exclusive
holder is let in before a shared one that asks after it."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from tests.worker_stack import machine_lock


def _hold(
    files: tuple[Path, Path], exclusive: bool, seconds: float, log: list[tuple[str, str, float]], name: str
):  # type: ignore[no-untyped-def]
    with machine_lock(*files, exclusive=exclusive):
        log.append((name, "in", time.monotonic()))
        time.sleep(seconds)
        log.append((name, "out", time.monotonic()))


def _spans(log: list[tuple[str, str, float]]) -> dict[str, tuple[float, float]]:
    starts = {name: t for name, what, t in log if what == "in"}
    return {name: (starts[name], t) for name, what, t in log if what == "out"}


def _start(files, exclusive, seconds, log, name):  # type: ignore[no-untyped-def]
    thread = threading.Thread(target=_hold, args=(files, exclusive, seconds, log, name))
    thread.start()
    return thread


def test_shared_holders_overlap_and_an_exclusive_one_runs_alone(tmp_path: Path) -> None:
    files = (tmp_path / "turnstile", tmp_path / "machine")
    log: list[tuple[str, str, float]] = []
    first = _start(files, False, 0.6, log, "shared-1")
    time.sleep(0.1)
    second = _start(files, False, 0.6, log, "shared-2")
    time.sleep(0.1)
    alone = _start(files, True, 0.3, log, "exclusive")
    for thread in (first, second, alone):
        thread.join(10)
    spans = _spans(log)
    assert spans["shared-2"][0] < spans["shared-1"][1], "two shared holders ran one after the other"
    for shared in ("shared-1", "shared-2"):
        assert spans["exclusive"][0] >= spans[shared][1], f"the exclusive holder overlapped {shared}"


def test_a_waiting_exclusive_holder_goes_before_a_later_shared_one(tmp_path: Path) -> None:
    files = (tmp_path / "turnstile", tmp_path / "machine")
    log: list[tuple[str, str, float]] = []
    running = _start(files, False, 0.5, log, "running")
    time.sleep(0.1)
    waiting = _start(files, True, 0.3, log, "exclusive")
    time.sleep(0.1)
    later = _start(files, False, 0.1, log, "later")
    for thread in (running, waiting, later):
        thread.join(10)
    spans = _spans(log)
    assert spans["running"][1] <= spans["exclusive"][0]
    assert spans["exclusive"][1] <= spans["later"][0], (
        "a shared holder got in ahead of the waiting exclusive one"
    )
