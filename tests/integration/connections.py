"""The TCP connections a process tree holds to one port, sampled with ``ss`` while something runs.

The local XRootD sites run on loopback in the host's network namespace, so ``ss -tnie`` sees both ends of
every connection; a connection counts when a process of the tree owns its socket (its inode, ``ino:``,
among the sockets in the tree's ``/proc/<pid>/fd``), and its ``bytes_received`` says whether data came
over it. The owners are found from the tree's own descriptors, not with ``ss -p``, which reads every
process's descriptors on the machine: a sample then took long enough that a copy program living some
50 ms (an XRootD pull whose data all went over its unpaced sub-streams) was missed in every sample of one
run in two (2026-11-28, ``xrdcp-wan`` with 2 and 4 streams, the machine otherwise idle)."""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

INODE = re.compile(r"\bino:(\d+)")
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


def socket_owners(pids: set[int]) -> dict[int, tuple[int, str]]:
    """The sockets the processes ``pids`` hold: inode -> (pid, command)."""
    owners: dict[int, tuple[int, str]] = {}
    for pid in pids:
        try:
            command = Path(f"/proc/{pid}/comm").read_text().strip()
            descriptors = list(Path(f"/proc/{pid}/fd").iterdir())
        except (FileNotFoundError, ProcessLookupError):  # the process ended meanwhile
            continue
        for descriptor in descriptors:
            try:
                target = os.readlink(descriptor)
            except (FileNotFoundError, ProcessLookupError):
                continue
            if target.startswith("socket:["):
                owners[int(target[8:-1])] = (pid, command)
    return owners


def parse(output: str, owners: dict[int, tuple[int, str]]) -> dict[str, Connection]:
    """Connections in ``ss -tnieH`` output whose socket one of ``owners`` holds, by local address."""
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
        inode = INODE.search(line)
        if inode and int(inode.group(1)) in owners and len(fields) >= 4:
            pid, command = owners[int(inode.group(1))]
            current = found[fields[2]] = Connection(fields[2], pid, command)
    return found


def sample(port: int, root_pid: int) -> dict[str, Connection]:
    """The tree's established connections to ``port`` now.

    The tree and its sockets are read both before and after ``ss`` runs: a copy program that ends while
    ``ss`` runs is in the first reading, one that starts (or opens a connection) meanwhile in the second."""
    before = socket_owners(process_tree(root_pid))
    output = subprocess.run(
        ["ss", "-tnieH", "state", "established", f"( dport = :{port} )"],
        capture_output=True,
        text=True,
        check=True,
        timeout=10,
    ).stdout
    return parse(output, {**before, **socket_owners(process_tree(root_pid))})


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
