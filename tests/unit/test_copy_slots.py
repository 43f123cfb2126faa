"""The copies the deployment's workers run at once, and the worker pool sized for them (srcnet/workers.py)."""

from __future__ import annotations

import pytest

from localnet.stack import worker_argv
from srcnet.workers import CONTROL_SLOTS, DEFAULT_COPY_SLOTS, copy_slots, worker_concurrency


def test_a_worker_runs_a_process_for_each_copy_slot_and_the_control_tasks(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("SRCNET_COPY_SLOTS", raising=False)
    assert copy_slots() == DEFAULT_COPY_SLOTS
    assert worker_concurrency() == DEFAULT_COPY_SLOTS + CONTROL_SLOTS
    monkeypatch.setenv("SRCNET_COPY_SLOTS", "5")
    assert worker_concurrency() == 5 + CONTROL_SLOTS
    argv = worker_argv("w@h")
    assert argv[argv.index("--concurrency") + 1] == str(5 + CONTROL_SLOTS)
    # A fixture may still ask for a pool of its own size.
    argv = worker_argv("w@h", concurrency=2)
    assert argv[argv.index("--concurrency") + 1] == "2"


@pytest.mark.parametrize("bad", ["0", "-3", "twelve", "", "1.5"])
def test_a_bad_copy_slots_setting_is_an_error_naming_it(monkeypatch, bad: str) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("SRCNET_COPY_SLOTS", bad)
    with pytest.raises(ValueError, match="SRCNET_COPY_SLOTS"):
        copy_slots()
