"""A worker keeps its PostgreSQL connections from task to task, as the web server does (CONN_MAX_AGE, checked
around each task): Celery's Django fix-up would otherwise close them before and after every task, and a new
backend per task was most of the database's CPU at a hundred tasks a second (issue 33)."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
from django.conf import settings

from localnet.processes import child_pids
from transfers.tasks import dispatch

pytestmark = pytest.mark.django_db(transaction=True)


def _postgres_sockets(pid: int) -> set[int]:
    """The socket inodes by which process ``pid`` is connected to the test database's PostgreSQL."""
    port = int(str(settings.DATABASES["default"]["PORT"]))
    to_postgres = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as fh:
            next(fh)
            for line in fh:
                fields = line.split()
                if int(fields[2].rsplit(":", 1)[1], 16) == port and fields[3] == "01":  # ESTABLISHED
                    to_postgres.add(int(fields[9]))
    held = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if (match := re.fullmatch(r"socket:\[(\d+)\]", target)) and int(match[1]) in to_postgres:
            held.add(int(match[1]))
    return held


def _run_tasks(log: Path, count: int) -> None:
    """Send ``count`` dispatch tasks (nothing waits: each reads the queue and admits nothing) and wait for
    the worker's log to say each succeeded."""
    before = log.read_text().count("transfers.dispatch[")
    for _ in range(count):
        dispatch.delay()
    deadline = time.monotonic() + 60
    while log.read_text().count("transfers.dispatch[") < before + 2 * count:  # received, then succeeded
        assert time.monotonic() < deadline, "the worker did not run the tasks"
        time.sleep(0.2)


def _connections(worker_pid: int) -> dict[int, set[int]]:
    return {pid: sockets for pid in child_pids(worker_pid) if (sockets := _postgres_sockets(pid))}


def test_a_worker_process_keeps_its_database_connection_from_task_to_task(celery_worker, test_state):
    log = test_state.sub("log") / "pytest-celery-worker.log"
    _run_tasks(log, 20)
    first = _connections(celery_worker)
    assert first, "no pool process holds a connection after its tasks: each task's was closed"
    assert all(len(sockets) == 1 for sockets in first.values()), first
    _run_tasks(log, 20)
    second = _connections(celery_worker)
    # The same processes, the same connections: none was closed and opened again for the second tasks.
    kept = {pid: sockets for pid, sockets in second.items() if pid in first}
    assert kept and all(kept[pid] == first[pid] for pid in kept), (first, second)
