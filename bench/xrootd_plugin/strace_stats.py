"""Syscall counts and socket-thread blocking from one `strace -f -T -yy` run of a server.

Used by bench.py (loopback) and wan_bench.py (emulated paths).  The trace is taken
in a separate run from the throughput and CPU runs (ptrace slows every syscall).

Method: every syscall of every server thread (and of the children it forks, e.g. the
TPC copy program) is logged with its duration (`-T`, entry to exit as the tracer
sees it) and with the kind of each descriptor (`-yy`: `TCP:[...]` for a TCP socket,
the path for a file).  A *socket thread* is a thread that moved at least
`SOCKET_THREAD_MIN_BYTES` of payload through TCP sockets in the transfer's data
direction (receives for uploads and TPC pulls, sends for downloads).  Per class of
syscall the durations of those threads are summed:

* ``disk_write``: write/pwrite64/pwritev/pwritev2/writev on a regular file and
  fsync/fdatasync/sync_file_range/fallocate/ftruncate: the time the socket thread
  could not read the socket because it was writing to the disk (the stock server's
  "read a chunk, pwrite it" loop);
* ``disk_read``: read/pread64/preadv on a regular file;
* ``sock_send``: write/writev/sendmsg/sendto/sendfile on a TCP socket (sendfile
  counts here: with the file in the page cache it waits for send-buffer space);
* ``wait``: futex/poll/epoll_wait/select/nanosleep (idle or lock waits, not
  attributed).

Only the standard library is used.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections import defaultdict
from dataclasses import dataclass, field

SOCKET_THREAD_MIN_BYTES = 1 << 20

_START = re.compile(r"^(\d+)\s+([a-z_0-9]+)\((.*)$")
_RESUMED = re.compile(r"^(\d+)\s+<\.\.\. ([a-z_0-9]+) resumed>(.*)$")
_RET = re.compile(r"\)\s+=\s+(-?\d+|\?)(?=\s|$).*<(\d+\.\d+)>\s*$")
_SOCKET_FD = re.compile(r"^\d+<TCP(v6)?:\[")
_FILE_FD = re.compile(r"^\d+</")
_WAITS = {"futex", "poll", "ppoll", "epoll_wait", "epoll_pwait", "select", "pselect6", "nanosleep"}
_DISK_SYNC = {"fsync", "fdatasync", "sync_file_range", "fallocate", "ftruncate"}
_WRITES = {"write", "pwrite64", "pwritev", "pwritev2", "writev"}
_READS = {"read", "pread64", "preadv", "preadv2", "readv"}
_RECVS = {"read", "readv", "recvfrom", "recvmsg"}
_SENDS = {"write", "writev", "sendmsg", "sendto", "sendfile"}


@dataclass
class ThreadStats:
    calls: int = 0
    seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    calls_by: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    recv_bytes: int = 0
    send_bytes: int = 0


@dataclass
class TraceStats:
    calls: int
    by_name: dict[str, int]
    threads: dict[int, ThreadStats]

    def socket_threads(self, direction: str) -> list[int]:
        """Threads that carried the data: direction 'recv' (upload, TPC) or 'send' (download)."""
        key = "recv_bytes" if direction == "recv" else "send_bytes"
        return [t for t, s in self.threads.items() if getattr(s, key) >= SOCKET_THREAD_MIN_BYTES]

    def socket_thread_seconds(self, direction: str, what: str) -> float:
        return sum(self.threads[t].seconds[what] for t in self.socket_threads(direction))

    def all_seconds(self, what: str) -> float:
        return sum(s.seconds[what] for s in self.threads.values())


def _classify(name: str, args: str) -> str | None:
    first = args.split(",", 1)[0] if name != "sendfile" else args
    if name == "sendfile":
        return "sock_send" if _SOCKET_FD.match(first) else None
    if name in _WAITS:
        return "wait"
    if _SOCKET_FD.match(first):
        if name in _RECVS:
            return "sock_recv"
        if name in _SENDS:
            return "sock_send"
        return None
    if _FILE_FD.match(first):
        if name in _WRITES or name in _DISK_SYNC:
            return "disk_write"
        if name in _READS:
            return "disk_read"
    return None


def parse(text: str) -> TraceStats:
    threads: dict[int, ThreadStats] = defaultdict(ThreadStats)
    by_name: dict[str, int] = defaultdict(int)
    pending: dict[int, tuple[str, str]] = {}
    calls = 0
    for line in text.splitlines():
        m = _START.match(line)
        if m:
            tid, name, rest = int(m.group(1)), m.group(2), m.group(3)
            if rest.endswith("<unfinished ...>"):
                pending[tid] = (name, rest)
                continue
            args = rest
        else:
            m = _RESUMED.match(line)
            if not m:
                continue  # signals, exits, attach messages
            tid, name, rest = int(m.group(1)), m.group(2), m.group(3)
            pname, args = pending.pop(tid, (name, ""))
            if pname != name:
                args = ""
        r = _RET.search(rest)
        calls += 1
        by_name[name] += 1
        st = threads[tid]
        st.calls += 1
        if not r:
            continue
        ret = int(r.group(1)) if r.group(1) != "?" else -1
        dur = float(r.group(2))
        kind = _classify(name, args)
        if kind is None:
            continue
        st.seconds[kind] += dur
        st.calls_by[kind] += 1
        if kind == "sock_recv" and ret > 0:
            st.recv_bytes += ret
        elif kind == "sock_send" and ret > 0:
            st.send_bytes += ret
    return TraceStats(calls=calls, by_name=dict(by_name), threads=dict(threads))


def trace(pid: int, action, out_path, settle_s: float = 1.0) -> TraceStats:
    """Attach `strace -f -T -yy` to every thread of `pid`, run `action()`, detach, parse."""
    cmd = ["strace", "-f", "-T", "-yy", "-qq", "-s", "0", "-o", str(out_path)]
    for tid in os.listdir(f"/proc/{pid}/task"):
        cmd += ["-p", tid]
    tracer = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(settle_s)
    try:
        action()
    finally:
        tracer.send_signal(signal.SIGINT)
        tracer.wait(timeout=120)
    with open(out_path, errors="replace") as f:
        return parse(f.read())
