"""CPU seconds spent by the processes of a run, by component, read from /proc (Linux): a process tree's
user and system time, with that of its children already reaped (a Celery pool process replaced, a
PostgreSQL backend that ended), so a component's share survives its processes' turnover."""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()  # fields from the state on (the name may hold spaces)


def _children() -> dict[int, list[int]]:
    children: dict[int, list[int]] = defaultdict(list)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) is not None:
            children[int(fields[1])].append(int(entry.name))
    return children


def own_seconds(pid: int) -> float:
    """CPU seconds of the process ``pid`` alone (0 if gone)."""
    fields = _stat(pid)
    return sum(int(v) for v in fields[11:13]) / TICKS if fields else 0.0


def descendants(root: int) -> set[int]:
    """``root`` and every live process below it."""
    children, tree, todo = _children(), set(), [root]
    while todo:
        tree.add(pid := todo.pop())
        todo += children.get(pid, [])
    return tree


def tree_seconds(root: int) -> float:
    """CPU seconds of ``root`` and its live descendants, each with its reaped children's (0 if gone)."""
    total = 0
    for pid in descendants(root):
        fields = _stat(pid)
        if fields is not None:
            total += sum(int(v) for v in fields[11:15])  # utime, stime, cutime, cstime
    return total / TICKS


def machine_split() -> dict[str, float]:
    """The machine's busy CPU seconds (all cores) in user space and in the kernel (system, interrupts and
    soft interrupts: where packets through veth pairs and bridges are paid for), from /proc/stat."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    return {"machine_user": (user + nice + steal) / TICKS, "machine_kernel": (system + irq + softirq) / TICKS}


def component_pids(worker_pid: int) -> dict[str, int]:
    """The run's components: its worker (with beat), PostgreSQL's postmaster, Redis, this process."""
    from django.db import connection

    from srcnet.task_queue import broker_redis

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = int(cursor.fetchone()[0])
    fields = _stat(backend)
    postmaster = int(fields[1]) if fields else backend
    return {
        "worker": worker_pid,
        "postgresql": postmaster,
        "redis": int(broker_redis().info()["process_id"]),
        "bench": os.getpid(),
    }


def snapshot(pids: dict[str, int]) -> dict[str, float]:
    """Each component's CPU seconds so far: its process tree's, but the bench's own process alone (the
    worker, PostgreSQL and Redis of its state are its children)."""
    taken = {name: own_seconds(pid) if name == "bench" else tree_seconds(pid) for name, pid in pids.items()}
    taken.update(machine_split())
    taken["machine"] = taken["machine_user"] + taken["machine_kernel"]
    return taken


def per_file(before: dict[str, float], after: dict[str, float], files: int) -> dict[str, float | None]:
    """CPU milliseconds per file made AVAILABLE by component, and the rest of the machine ("other")."""
    spent = {name: after[name] - before[name] for name in before}
    spent["other"] = spent["machine"] - sum(v for k, v in spent.items() if not k.startswith("machine"))
    return {name: round(seconds * 1000 / files, 2) if files else None for name, seconds in spent.items()}


def cores_busy(before: dict[str, float], after: dict[str, float], seconds: float) -> dict[str, float]:
    """Each component's cores busy on average between two snapshots ``seconds`` apart."""
    return {name: round((after[name] - before[name]) / seconds, 3) for name in before if seconds > 0}
