"""The TCP connections a process tree holds to one port, sampled with ``ss`` while something runs.

The local XRootD sites run on loopback in the host's network namespace, so ``ss -tnpi`` sees both ends of
every connection; a connection counts when a process of the tree owns its socket (``-p``), and its
``bytes_received`` says whether data came over it."""

from __future__ import annotations

import re
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

OWNER = re.compile(r'\("([^"]*)",pid=(\d+),fd=\d+\)')
RECEIVED = re.compile(r"\bbytes_received:(\d+)")


@dataclass
class Connection:
    local: str  # address:port at the tree's end
    pid: int
    command: str
    bytes_received: int = 0


def process_tree(root: int) -> set[int]:
    """``root`` and every process descended from it (the server and the copy programs it starts)."""
    tree, todo = {root}, [root]
    while todo:
        pid = todo.pop()
        try:
            tasks = list(Path(f"/proc/{pid}/task").iterdir())
        except (FileNotFoundError, ProcessLookupError):  # the process ended while the tree was walked
            continue
        for task in tasks:
            try:
                children = {int(c) for c in (task / "children").read_text().split()}
            except (FileNotFoundError, ProcessLookupError):
                continue
            todo += sorted(children - tree)
            tree |= children
    return tree


def parse(output: str, pids: set[int]) -> dict[str, Connection]:
    """Connections in ``ss -tnpiH`` output owned by one of ``pids``, by local address."""
    found: dict[str, Connection] = {}
    current: Connection | None = None
    for line in output.splitlines():
        if line[:1].isspace():  # the info line of the socket above
            match = RECEIVED.search(line)
            if current is not None and match:
                current.bytes_received = int(match.group(1))
            continue
        current = None
        fields = line.split()
        for command, pid in OWNER.findall(line):
            if int(pid) in pids and len(fields) >= 4:
                current = found[fields[2]] = Connection(fields[2], int(pid), command)
                break
    return found


def sample(port: int, root_pid: int) -> dict[str, Connection]:
    """The tree's established connections to ``port`` now.

    The tree is walked both before and after ``ss`` runs: a copy program that ends while ``ss`` scans
    (which takes long on a busy machine: it reads every process's sockets) is in the first walk, one that
    starts meanwhile in the second. Walked only after, a short copy's program was gone by then in every
    sample of a loaded CI run, and its connections were not counted."""
    before = process_tree(root_pid)
    output = subprocess.run(
        ["ss", "-tnpiH", "state", "established", f"( dport = :{port} )"],
        capture_output=True,
        text=True,
        check=True,
        timeout=10,
    ).stdout
    return parse(output, before | process_tree(root_pid))


class ConnectionSampler:
    """Samples in a thread of its own until the block ends: every connection seen, with the most bytes it
    was seen to have received, and the most seen at once."""

    def __init__(self, port: int, root_pid: int, interval: float = 0.02) -> None:
        self.port, self.root_pid, self.interval = port, root_pid, interval
        self.seen: dict[str, Connection] = {}
        self.peak = 0
        self.samples = 0  # taken while the block ran: a sampler that fell behind says so
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ss-sampler", daemon=True)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                now = sample(self.port, self.root_pid)
                self.samples += 1
                self.peak = max(self.peak, len(now))
                for local, connection in now.items():
                    known = self.seen.setdefault(local, connection)
                    known.bytes_received = max(known.bytes_received, connection.bytes_received)
                time.sleep(self.interval)
        except BaseException as exc:  # reported by __exit__: a dead sampler must not read as "no connection"
            self.error = exc

    def __enter__(self) -> ConnectionSampler:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=15)
        if self.error is not None and kind is None:
            raise RuntimeError(f"the connection sampler failed after {self.samples} samples") from self.error

    def carrying(self, at_least: int) -> list[Connection]:
        """The connections that received at least ``at_least`` bytes."""
        return [c for c in self.seen.values() if c.bytes_received >= at_least]
