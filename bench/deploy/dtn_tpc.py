"""A plugin third-party copy across bench/wan's emulated path, for bench/deploy/dtn_effect.py: one XRootD
server with the project's plugin at each end of the path (bench/wan/xrdsite.py, in the path ends' network
namespaces, the ones the booted DTN hosts live in and the dtn_tuning role tunes), and a root:// TPC that
the destination (end A) pulls from the source (end B) with the plugin's ``xrdcp-wan``, timed from the
client's ``xrdcp --tpc only`` (as the platform's workers ask for it: one stream, XrdCl's default).

Reads in flight of the pulling program: ``deployed`` is the xrootd_site role's own line (``--inflight 16``,
8 MiB chunks: 128 MiB per round trip); ``bdp`` sizes them to the path (``--bdp rate x RTT``, the plugin
README's advice for long paths).

``tokens`` (a ``bench/wan/wantokens.WanIssuer``): both sites enforce that issuer's tokens, as the xrootd_site
role's do, and each copy carries the source's read token and the destination's write token (asked for before
the clock starts); None: sites without tokens, the baseline of what they cost."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import threading
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "bench" / "wan")]

import wanpath  # noqa: E402
import wantokens  # noqa: E402
import xrdsite  # noqa: E402
from matrix import adler32_file as adler32  # noqa: E402  (bench/wan's, for the same files)

READS = ("deployed", "bdp")
SOURCE_NAME = "dtn-tpc-source.bin"


class TpcSites:
    """A plugin site at end B holding the source file, and one plugin site at end A per reads setting
    (each on ports of its own), started before the first copy and stopped by ``close()``."""

    def __init__(
        self, path: wanpath.EmulatedPath, size: int, reads: list[str], rate_mbit: int, tokens: object = None
    ) -> None:
        unknown = set(reads) - set(READS)
        if unknown:
            raise ValueError(f"unknown reads setting {sorted(unknown)}; known: {READS}")
        self.path, self.size = path, size
        self._stack = ExitStack()
        bdp = int(rate_mbit * 1e6 / 8 * path.config.rtt_ms / 1000)
        # Ports apart from the standard ones: the booted hosts in these namespaces are not XRootD sites.
        self.source = self._stack.enter_context(
            xrdsite.XrootdSite(path, "b", port=1190, http_port=8190, plugin=True, tokens=tokens)
        )
        self.destinations = {
            name: self._stack.enter_context(
                xrdsite.XrootdSite(
                    path,
                    "a",
                    port=1191 + i,
                    http_port=8191 + i,
                    plugin=True,
                    tpc_bdp_bytes=bdp if name == "bdp" else None,
                    tokens=tokens,
                )
            )
            for i, name in enumerate(reads)
        }
        self.source_file = self.source.local_path(SOURCE_NAME)
        _write_random(self.source_file, size)
        shutil.chown(self.source_file, "xrootd", "xrootd")
        self.source_sum = adler32(self.source_file)
        subprocess.run(["sync"], timeout=300, check=True)  # nothing left to flush while a copy runs

    def copy(self, reads: str, label: str) -> dict[str, object]:
        """One TPC from B to the ``reads`` site at A: wall seconds of the client, Gbit/s, adler32 checked."""
        site = self.destinations[reads]
        name = f"dtn-tpc-{label}-{reads}.bin"
        argv = ["xrdcp", "-f", "--tpc", "only", self.source.read_url(SOURCE_NAME), site.write_url(name)]
        sampler = _Sampler(self.path)
        sampler.start()
        servers = {"source": self.source.proc.pid, "destination": site.proc.pid}
        cpu_before = _machine_busy(), {k: _process_cpu(pid) for k, pid in servers.items()}
        started = time.monotonic()
        try:
            result = self.path.run_a(
                argv, env=xrdsite.XRD_ENV, capture_output=True, text=True, timeout=900, check=False
            )
        finally:
            seconds = time.monotonic() - started
            sampler.finish()
        busy = _machine_busy() - cpu_before[0]
        # CPU seconds of each server during the copy; the destination's include its finished xrdcp-wan.
        cpu = {k: round(_process_cpu(pid) - cpu_before[1][k], 1) for k, pid in servers.items()}
        if result.returncode != 0:
            said = wantokens.redact(result.stderr[-2000:]) if self.source.tokens else result.stderr[-2000:]
            raise RuntimeError(f"TPC {label}/{reads} failed: {said} | {site.log_tail()}")
        copied = site.local_path(name)
        if os.path.getsize(copied) != self.size or adler32(copied) != self.source_sum:
            raise RuntimeError(f"TPC {label}/{reads}: the copy differs from the source")
        os.unlink(copied)
        gbps = round(self.size * 8 / seconds / 1e9, 3)
        row: dict[str, object] = {
            "seconds": round(seconds, 2),
            "gbps": gbps,
            "tokens": bool(self.source.tokens),
        }
        row.update(sampler.data_phase(self.size))
        row["cpus_busy"] = round(busy / seconds / (os.cpu_count() or 1), 2)  # every process, all CPUs
        row["cpu_seconds"] = cpu
        return row

    def close(self) -> None:
        self._stack.close()


class _Sampler(threading.Thread):
    """The emulator's B-to-A delivered bytes every 0.2 s (its own monotonic stamps): when the data moved."""

    def __init__(self, path: wanpath.EmulatedPath) -> None:
        super().__init__(daemon=True)
        self.path, self.stopping = path, threading.Event()
        self.samples: list[tuple[float, int]] = []

    def run(self) -> None:
        while not self.stopping.is_set():
            with contextlib.suppress(OSError, ValueError, KeyError):
                stats = self.path.stats(fresh=False)
                self.samples.append((stats["mono_ns"] / 1e9, int(stats["ba"]["tx_bytes"])))
            self.stopping.wait(0.2)

    def finish(self) -> None:
        self.stopping.set()
        self.join()

    def data_phase(self, size: int) -> dict[str, object]:
        """Seconds from the first MiB of the file on the wire to its last byte there, and that rate (the
        copy without its set-up and close: logins, opens, the source's checksum, the program's start)."""
        if len(self.samples) < 2:
            return {}
        base = self.samples[0][1]
        first = next((t for t, b in self.samples if b - base >= 1 << 20), None)
        # The last byte: the first sample within 64 KiB of the final count (wire bytes carry headers too, so
        # the count passes the file's size before its end; after the copy only a few small packets pass).
        final = self.samples[-1][1]
        if final - base < size:
            return {}
        last = next((t for t, b in self.samples if b >= final - (1 << 16)), None)
        if first is None or last is None or last <= first:
            return {}
        # first is the end of the 0.2 s interval in which the data began: count from the sample before it.
        before = max((t for t, _ in self.samples if t < first), default=first)
        wire = last - before
        return {"wire_seconds": round(wire, 2), "wire_gbps": round(size * 8 / wire / 1e9, 3)}


def _machine_busy() -> float:
    """CPU seconds all CPUs spent busy since boot (/proc/stat: everything but idle and iowait)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def _process_cpu(pid: int) -> float:
    """CPU seconds of a process and of its children it has waited for (utime, stime, cutime, cstime)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def _write_random(path: str, size: int) -> None:
    """Incompressible bytes, every 4 MiB block different (nothing downstream can dedupe them)."""
    block = os.urandom(1 << 22)
    with open(path, "wb") as f:
        left, n = size, 0
        while left > 0:
            chunk = (n.to_bytes(8, "big") + block[8:])[:left]
            f.write(chunk)
            left -= len(chunk)
            n += 1


def parse_size(text: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    text = text.strip().lower()
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)
