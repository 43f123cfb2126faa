"""Each pytest-xdist worker runs on a local network of its own.

``make test`` runs the suite in two pytest-xdist workers (scripts/test.sh): most of the suite's time is
spent waiting on real processes (copies, restarts, playbooks, timers), so a second worker uses the core
the first leaves idle. Two workers must never share a process whose state a test reads or changes: a
Celery worker taking the other's tasks from one queue would run them against the wrong database, a fault
test restarting PostgreSQL would cut the other worker's tests off. So each worker gets the state folder
``<state>-<worker>`` (``test-gw0``, ``test-gw1``) with its own PostgreSQL, Redis, XRootD sites, Celery
worker, Rucio server and long-haul network, exactly as two ``localnet test`` runs with different
``SRCNET_TEST_STATE`` would.

A test that measures time or rate on this machine (``@pytest.mark.exclusive``: the WAN emulator's fidelity,
a copy's pace) runs while no test runs in the other worker: each test holds a shared lock on the machine
for its whole protocol (set-up, call, teardown), an exclusive test an exclusive one; a turnstile lets a
waiting exclusive test in before the other worker's next test starts. Its figures are then what they are
when the suite runs in one process.

Loaded with ``-p tests.worker_stack`` (pyproject's addopts) so that it runs before pytest-django imports
Django's settings, which read the state's ports. Without xdist (``-n 0``, a single test) it does nothing."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Where the controller's workers write each test's group (set by the controller, inherited by its workers).
GROUPS_ENV = "SRCNET_XDIST_GROUPS"


def worker_state_name() -> str | None:
    """The state folder of this xdist worker (``<SRCNET_STATE>-<worker id>``), or None outside xdist."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return None
    return f"{os.environ.get('SRCNET_STATE', 'test')}-{worker}"


def _start_worker_stack(name: str | None) -> None:
    if name is None:
        return
    from localnet.stack import ensure_core, service_env
    from localnet.state import StateDir

    worker = os.environ["PYTEST_XDIST_WORKER"]
    state = StateDir.named(name)
    ensure_core(state)
    # The environment of a `localnet test` run on this state, as every process of the stack gets it.
    os.environ.update(service_env(state, name))
    # Its own Redis already keeps its tasks apart; the queue's name says whose they are in the logs too.
    queue = os.environ.get("SRCNET_CELERY_QUEUE", f"srcnet-test-{os.getppid()}")
    os.environ["SRCNET_CELERY_QUEUE"] = f"{queue}-{worker}"


# Named once: the worker's SRCNET_STATE is its own from here on.
WORKER_STATE = worker_state_name()
_start_worker_stack(WORKER_STATE)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop the worker's stack (by the PIDs its state recorded), as `localnet test` stops its own."""
    if WORKER_STATE is None and os.environ.get(GROUPS_ENV):
        Path(os.environ[GROUPS_ENV]).unlink(missing_ok=True)
    files = _lock_files()
    for lock in files or ():
        # The other worker, if still running, opens a fresh one: it has no one left to wait for.
        lock.unlink(missing_ok=True)
    if WORKER_STATE is None or os.environ.get("SRCNET_KEEP_TEST_STACK"):
        return
    from localnet.stack import down
    from localnet.state import StateDir

    down(StateDir.named(WORKER_STATE))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "exclusive: measures time or rate on this machine; runs while no test runs in another xdist worker",
    )
    if WORKER_STATE is None and config.getvalue("dist") == "loadgroup":
        # The controller: where its workers write each test's group (inherited when they are spawned).
        os.environ[GROUPS_ENV] = str(_run_files() / f"groups-{os.getpid()}.json")


# -- the groups: tests that share an expensive set-up run in one worker ------------------------------------
# xdist's own ``xdist_group`` marks do not reach its scheduler under pytest 9 (the group is appended to a
# test id that pytest 9 no longer stores as a string), so the workers write each test's group to a file
# and the scheduler below reads it: a group is one unit of work, handed to one worker.


def record_groups(groups: dict[str, str], exclusive: list[str]) -> None:
    """In a worker, at collection: each grouped test's id -> its group (tests/conftest.py decides), and the
    ids of the exclusive tests."""
    path = os.environ.get(GROUPS_ENV)
    if WORKER_STATE is None or not path:
        return
    staging = Path(f"{path}.{os.getpid()}")
    staging.write_text(json.dumps({"groups": groups, "exclusive": exclusive}))
    staging.replace(path)


def _recorded() -> dict[str, Any]:
    path = os.environ.get(GROUPS_ENV, "")
    if not path or not Path(path).exists():
        return {"groups": {}, "exclusive": []}
    return json.loads(Path(path).read_text())  # type: ignore[no-any-return]


@pytest.hookimpl(tryfirst=True)  # before xdist's own choice of scheduler
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SharedSetupScheduling(LoadScopeScheduling):  # type: ignore[misc]
        """xdist's scope scheduling with our groups as the scopes (a test of no group is a scope of its
        own); the scopes with the most tests are handed out first, and those holding an exclusive test
        last: handed out early, an exclusive test waited for the other worker's long tests (the booted
        hosts' playbooks, the fault tests' timers) to end, one worker idle for minutes (523 s in one run)."""

        recorded: dict[str, Any] | None = None
        ordered = False

        def _recorded_once(self) -> dict[str, Any]:
            # Written by the workers at collection, which is complete before the first scope is asked for.
            if self.recorded is None:
                self.recorded = _recorded()
            return self.recorded

        def _assign_work_unit(self, node: Any) -> None:
            if not self.ordered:
                self.ordered = True
                last = {self._split_scope(nodeid) for nodeid in self._recorded_once()["exclusive"]}
                for scope in [scope for scope in self.workqueue if scope in last]:
                    self.workqueue.move_to_end(scope)
            super()._assign_work_unit(node)

        def schedule(self) -> None:
            if self.collection is None and self.collection_is_completed:
                collected: list[str] = next(iter(self.registered_collections.values()), [])
                shared = sorted(nodeid for nodeid, n in Counter(collected).items() if n > 1)
                if shared:
                    # xdist keys its work by test id: of tests sharing one, it would run the first alone.
                    named = ", ".join(shared[:3])
                    raise pytest.UsageError(
                        f"{len(shared)} test ids name more than one test under xdist ({named}): "
                        "run their module in the serial part of scripts/test.sh"
                    )
            super().schedule()

        def _split_scope(self, nodeid: str) -> str:
            return str(self._recorded_once()["groups"].get(nodeid, nodeid))

    return SharedSetupScheduling(config, log)


def _run_files() -> Path:
    """The folder of a run's shared files: under the project's state root (root-owned, not the
    world-writable /tmp, where a name known in advance could be someone else's link)."""
    from localnet.state import default_state_root

    folder = default_state_root() / "xdist"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder


def _lock_files() -> tuple[Path, Path] | None:
    """The turnstile and the machine lock that the workers of this run share, or None outside xdist."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if WORKER_STATE is None or not run:
        return None
    base = _run_files() / run
    return base.with_suffix(".turnstile"), base.with_suffix(".machine")


@contextlib.contextmanager
def machine_lock(turnstile_file: Path, machine_file: Path, *, exclusive: bool) -> Iterator[None]:
    """Hold the machine shared (any number of holders) or exclusive (one, no shared holder); an exclusive
    request holds the turnstile while it waits, so no new shared holder gets in ahead of it."""
    with open(turnstile_file, "a") as turnstile, open(machine_file, "a") as machine:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        fcntl.flock(machine, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        fcntl.flock(turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(machine, fcntl.LOCK_UN)


def _timeline_line(item: pytest.Item, asked: float, began: float, ended: float) -> None:
    """One line per test in test-artifacts/timeline-<worker>.tsv: when it asked for the machine, started
    and ended (seconds since the epoch), so a run's schedule and its waits can be read afterwards."""
    folder = Path(str(item.config.rootpath)) / "test-artifacts"
    folder.mkdir(exist_ok=True)
    with open(folder / f"timeline-{os.environ['PYTEST_XDIST_WORKER']}.tsv", "a") as out:
        out.write(f"{asked:.3f}\t{began:.3f}\t{ended:.3f}\t{item.nodeid}\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    files = _lock_files()
    if files is None:
        yield
        return
    asked = time.time()
    with machine_lock(*files, exclusive=item.get_closest_marker("exclusive") is not None):
        began = time.time()
        yield
    _timeline_line(item, asked, began, time.time())
