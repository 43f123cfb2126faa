"""The local Rucio server's daemons, running as long as the server does, as they run in production.

Seven processes per Rucio instance, started by ``localnet.rucio.ensure_rucio`` after the server answers and
stopped by PID with it (``stop_rucio``, ``stop_all_rucio``, ``python -m localnet down``):

| process | what it does |
| --- | --- |
| ``conveyor-submitter`` | hands queued transfer requests to the FTS3 endpoint of the destination RSE |
| ``conveyor-poller`` | asks that endpoint how the submitted transfers went |
| ``conveyor-finisher`` | records the outcome: replicas AVAILABLE and locks OK, or the request retried |
| ``judge-evaluator`` | applies rules to files attached to a dataset after its rule was made |
| ``judge-repairer`` | tries STUCK rules again (after ``[repairer] updated_at_delta``, 30 min) |
| ``transmogrifier`` | makes the rules of subscriptions for new datasets that match them |
| ``necromancer`` | copies replicas declared bad (by the consistency checks) again, or marks them lost |

The conveyor's three run through ``rucio/conveyor.py`` (Rucio's daemon functions with no partition wait, no
topology cache, and a poller that asks again after 3 s, as the local FTS3 service sends no messages); the
judge's two and the transmogrifier are Rucio's own scripts. Each has its PID file
``pids/<server>.<daemon>.pid`` and its log ``log/<server>.<daemon>.log``, ``<server>`` being the server's
own name (``rucio`` or ``rucio-<instance>``). A daemon is ready when it has written its heartbeat into the
instance's database.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from .processes import ServiceError, read_pid, running, start_daemon, stop_daemon
from .state import PROJECT_ROOT, StateDir

CONVEYOR = PROJECT_ROOT / "rucio" / "conveyor.py"
DAEMONS = (
    "conveyor-submitter",
    "conveyor-poller",
    "conveyor-finisher",
    "judge-evaluator",
    "judge-repairer",
    "transmogrifier",
    "necromancer",
)
# Seconds a daemon sleeps when a cycle found little to do: how long a rule waits at each step.
SLEEP_TIME = os.environ.get("SRCNET_RUCIO_DAEMON_SLEEP", "2")


def daemon_argv(daemon: str, venv: Path) -> list[str]:
    """The command line of one daemon, run with the Rucio venv's interpreter."""
    python = str(venv / "bin" / "python")
    conveyor = [python, str(CONVEYOR)]
    if daemon == "conveyor-submitter":
        return [
            *conveyor,
            "submitter",
            "--sleep-time",
            SLEEP_TIME,
            "--topology-ttl",
            "0",
            "--group-bulk",
            "200",
        ]
    if daemon == "conveyor-poller":
        return [
            *conveyor,
            "poller",
            "--sleep-time",
            SLEEP_TIME,
            "--older-than",
            "0",
            "--poll-again-after",
            "3",
        ]
    if daemon == "conveyor-finisher":
        return [*conveyor, "finisher", "--sleep-time", SLEEP_TIME, "--topology-ttl", "0"]
    if daemon == "judge-evaluator":
        return [str(venv / "bin" / "rucio-judge-evaluator"), "--sleep-time", SLEEP_TIME]
    if daemon == "judge-repairer":
        return [str(venv / "bin" / "rucio-judge-repairer"), "--sleep-time", "10"]
    if daemon == "transmogrifier":
        return [str(venv / "bin" / "rucio-transmogrifier"), "--sleep-time", SLEEP_TIME]
    if daemon == "necromancer":
        return [str(venv / "bin" / "rucio-necromancer"), "--sleep-time", SLEEP_TIME]
    raise ValueError(f"unknown Rucio daemon {daemon!r}")


def process_names(server: str) -> list[str]:
    """The PID-file names of the daemons of the server named ``server``."""
    return [f"{server}.{daemon}" for daemon in DAEMONS]


def _log_tail(state: StateDir, name: str, chars: int = 2000) -> str:
    try:
        return (state.path / "log" / f"{name}.log").read_text(errors="replace")[-chars:]
    except FileNotFoundError:
        return ""


def start_daemons(
    state: StateDir,
    server: str,
    *,
    venv: Path,
    env: Mapping[str, str],
    cwd: Path,
    account: str | None,
    heartbeats: Callable[[], set[int]],
    forget_heartbeats: Callable[[int], None] | None = None,
    timeout: float = 60.0,
) -> dict[str, int]:
    """Start every daemon of ``server`` that does not run, as ``account``; wait until each has written its
    heartbeat (``heartbeats()``: the PIDs with one). A daemon that exits or stays silent stops every daemon
    of the server and raises ServiceError quoting its log. Returns each daemon's PID.

    A daemon that died (Rucio's daemons exit when their database goes away at the wrong moment, e.g. a
    PostgreSQL restart during a heartbeat) is started again here, as systemd's ``Restart=`` does in
    production; first its old heartbeat is removed (``forget_heartbeats(old_pid)``), or for up to 10
    minutes the new one would count it as a live worker and take only its share of the work (the
    judge-evaluator partitions DIDs by live heartbeats)."""
    pids: dict[str, int] = {}
    for daemon, name in zip(DAEMONS, process_names(server), strict=True):
        if running(state, name):
            pids[name] = read_pid(state, name) or 0
            continue
        old = read_pid(state, name)
        if old and forget_heartbeats is not None:
            forget_heartbeats(old)
        pids[name] = start_daemon(
            state, name, daemon_argv(daemon, venv), env=env, cwd=cwd, log_name=f"{name}.log", user=account
        )
    deadline = time.monotonic() + timeout
    waiting = dict(pids)
    while waiting:
        for name in [n for n in waiting if not running(state, n)]:
            stop_daemons(state, server)
            tail = _log_tail(state, name)
            raise ServiceError(f"Rucio daemon {name} exited at start; its log ends:\n{tail}")
        beating = heartbeats()
        waiting = {name: pid for name, pid in waiting.items() if pid not in beating}
        if waiting and time.monotonic() > deadline:
            stop_daemons(state, server)
            names = ", ".join(sorted(waiting))
            raise ServiceError(f"Rucio daemons without a heartbeat after {timeout:.0f} s: {names}")
        if waiting:
            time.sleep(0.3)
    return pids


def stop_daemons(state: StateDir, server: str) -> list[str]:
    """Stop the daemons of ``server``, each by its PID file; the names of those that ran."""
    return [name for name in process_names(server) if stop_daemon(state, name, timeout=20)]
