"""Start daemons, remember them by PID, stop exactly those PIDs.

Only processes this package started are ever signalled: each has a PID file in ``<state>/pids``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from .state import StateDir
from .users import drop_to


class ServiceError(RuntimeError):
    """A local service could not be started or did not become ready."""


# The Popen of every daemon this process started, kept until it is reaped here. A Popen that is garbage
# collected polls its child once, so a daemon that had already exited was reaped by the collector and its
# exit status lost (the "exited before opening port" message then could not say how it ended).
_STARTED: dict[int, subprocess.Popen[bytes]] = {}


def pid_file(state: StateDir, name: str) -> Path:
    return state.sub("pids") / f"{name}.pid"


def read_pid(state: StateDir, name: str) -> int | None:
    try:
        return int(pid_file(state, name).read_text().strip())
    except (FileNotFoundError, ValueError):
        return None


def is_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child counts as gone. A process reaped between the open and the read makes the read fail with
    # ESRCH (ProcessLookupError), not ENOENT: any OSError here means it is gone.
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def account_of(pid: int | None) -> str:
    """The account a process runs as (its real user), "" if it is gone."""
    import pwd

    try:
        with open(f"/proc/{pid}/status") as fh:
            uid = next(int(line.split()[1]) for line in fh if line.startswith("Uid:"))
    except (OSError, StopIteration, TypeError, ValueError):  # OSError: gone, also mid-read (ESRCH)
        return ""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def running(state: StateDir, name: str) -> bool:
    return is_alive(read_pid(state, name))


def start_daemon(
    state: StateDir,
    name: str,
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    log_name: str | None = None,
    cwd: Path | None = None,
    user: str | None = None,
) -> int:
    """Start ``argv`` in its own session (Ctrl-C in the terminal does not reach it directly) and record it;
    as ``user`` when one is named (the recorded PID is the process itself, not a wrapper)."""
    log_path = state.sub("log") / (log_name or f"{name}.log")
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            list(argv),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=dict(env) if env is not None else None,
            cwd=str(cwd) if cwd else None,
            start_new_session=True,
            **drop_to(user),
        )
    _STARTED[proc.pid] = proc
    pid_file(state, name).write_text(str(proc.pid))
    return proc.pid


def stop_pid(pid: int, *, timeout: float = 10.0, sig: int = signal.SIGTERM) -> None:
    """Signal one PID and wait for it to go; SIGKILL after ``timeout``."""
    if not is_alive(pid):
        return
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _reap(pid)
        if not is_alive(pid):
            return
        time.sleep(0.05)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    for _ in range(100):
        _reap(pid)
        if not is_alive(pid):
            return
        time.sleep(0.05)


def _exit_status(pid: int) -> str:
    """How a child of ours ended (", exit status N" / ", killed by signal N"), if it can be told."""
    proc = _STARTED.get(pid)
    if proc is not None:
        code = proc.poll()
        if code is None:
            return ""
        del _STARTED[pid]
        return f", killed by signal {-code}" if code < 0 else f", exit status {code}"
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return ""
    if done != pid:
        return ""
    if os.WIFSIGNALED(status):
        return f", killed by signal {os.WTERMSIG(status)}"
    return f", exit status {os.WEXITSTATUS(status)}"


def collect(pid: int) -> None:
    """Collect ``pid``'s exit status if it is a child of ours that has ended (no zombie left behind)."""
    _reap(pid)


def _reap(pid: int) -> None:
    proc = _STARTED.get(pid)
    if proc is not None:
        if proc.poll() is not None:
            del _STARTED[pid]
        return
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def child_pids(pid: int) -> list[int]:
    """The processes ``pid`` started and has not reaped ([] if it is gone)."""
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except (OSError, ValueError):
        return []


def stop_daemon(state: StateDir, name: str, *, timeout: float = 10.0) -> bool:
    """Stop the daemon recorded as ``name`` and the processes it started (a gunicorn master's workers, which
    outlive a master stopped before them and keep its listening socket: the next server on that port then
    finds it taken, or its clients reset); True if one was running."""
    pid = read_pid(state, name)
    was_running = is_alive(pid)
    if pid:
        children = child_pids(pid) if was_running else []
        stop_pid(pid, timeout=timeout)
        for child in children:
            stop_pid(child, timeout=timeout)
    pid_file(state, name).unlink(missing_ok=True)
    return was_running


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def port_open_in(netns: str, port: int, host: str) -> bool:
    """``port_open`` from inside the network namespace ``netns``: for a service at an address the host has
    no route to (an emulated path's end, bench/wan/wanpath.py)."""
    probe = f"import socket; socket.create_connection(({host!r}, {port}), 0.5).close()"
    argv = ["ip", "netns", "exec", netns, sys.executable, "-c", probe]
    return subprocess.run(argv, capture_output=True, timeout=10, check=False).returncode == 0


def wait_for_port(
    port: int,
    *,
    timeout: float = 30.0,
    pid: int | None = None,
    what: str = "service",
    host: str = "127.0.0.1",
    netns: str | None = None,
) -> None:
    """Wait until ``port`` accepts connections (probed from inside ``netns`` when one is named). A plain TCP
    probe: XRootD clients that connect to a closed port back off for minutes, so nothing else may try
    first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if port_open_in(netns, port, host) if netns else port_open(port, host):
            return
        if pid is not None and not is_alive(pid):
            raise ServiceError(f"{what} exited before opening port {port}{_exit_status(pid)}")
        time.sleep(0.05)
    raise ServiceError(f"{what} did not open port {port} within {timeout:.0f} s")


def run(argv: Sequence[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    """Run a short command, raising ServiceError with its output on failure."""
    proc = subprocess.run(list(argv), capture_output=True, text=True, check=False, **kwargs)  # type: ignore[call-overload]
    if proc.returncode != 0:
        raise ServiceError(
            f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip() or proc.stdout.strip()}"
        )
    return proc
