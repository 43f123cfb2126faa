"""Sample the sender's TCP state (``ss -tin``) inside one end of an emulated path during a transfer.

Why: a transfer that stays below the bottleneck is limited by one of the network (cwnd, losses), the
receiver (``rwnd_limited``: its advertised window), the sender's buffer (``sndbuf_limited``) or the
application (``app_limited``: nothing to send). ``ss -i`` tells which, per connection; this samples it
every ``interval`` seconds on the busiest data connection (largest ``bytes_acked``) and summarises the
ramp (time to first data, to 90 % of the bottleneck) and the steady phase.
"""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

_NUM = r"([0-9.]+)"
_FIELDS = {
    "cwnd": re.compile(rf"\bcwnd:{_NUM}"),
    "rtt_ms": re.compile(rf"\brtt:{_NUM}/"),
    "bytes_acked": re.compile(rf"\bbytes_acked:{_NUM}"),
    "busy_ms": re.compile(rf"\bbusy:{_NUM}ms"),
    "rwnd_limited_ms": re.compile(rf"\brwnd_limited:{_NUM}ms"),
    "sndbuf_limited_ms": re.compile(rf"\bsndbuf_limited:{_NUM}ms"),
    "retrans_total": re.compile(rf"\bretrans:{_NUM}/([0-9]+)"),
    "unacked": re.compile(rf"\bunacked:{_NUM}"),
    "mss": re.compile(rf"\bmss:{_NUM}"),
    # Bytes the application has written that TCP has not sent yet: > 0 while the sender is
    # app_limited means TCP (cwnd, pacing) is the limit after all, 0 that the application is.
    "notsent": re.compile(rf"\bnotsent:{_NUM}"),
}
# ss prints rates with a unit prefix: "pacing_rate 1.04Gbps", "delivery_rate 961Mbps".
_RATES = {
    "pacing_rate_bps": re.compile(rf"\bpacing_rate {_NUM}([KMG]?)bps"),
    "delivery_rate_bps": re.compile(rf"\bdelivery_rate {_NUM}([KMG]?)bps"),
}
_UNIT = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9}


def parse_ss(text: str) -> list[dict]:
    """One dict per connection of ``ss -tinH`` output (a header line, then an indented detail line)."""
    conns: list[dict] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line[0].isspace():
            parts = line.split()
            # Recv-Q Send-Q Local Peer (a state filter drops the State column, so count from the end)
            local, peer = (parts[-2], parts[-1]) if len(parts) >= 4 else ("", "")
            conns.append({"local": local, "peer": peer})
            continue
        if not conns:
            continue
        conn = conns[-1]
        for name, rx in _FIELDS.items():
            m = rx.search(line)
            if m:
                conn[name] = float(m.group(2) if name == "retrans_total" else m.group(1))
        for name, rx in _RATES.items():
            m = rx.search(line)
            if m:
                conn[name] = float(m.group(1)) * _UNIT[m.group(2)]
        conn["app_limited"] = " app_limited" in f" {line}"
    return conns


@dataclass
class SsSampler:
    """Samples in a thread while the ``with`` block runs; ``samples`` holds one dict per tick."""

    path: object  # bench.wan.wanpath.Path (its .cmd(side, argv) runs argv in that namespace)
    side: str
    interval: float = 0.5
    samples: list[dict] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> SsSampler:
        self._t0 = time.monotonic()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _run(self) -> None:
        argv = self.path.cmd(self.side, ["ss", "-tinH", "state", "established"])  # type: ignore[attr-defined]
        while not self._stop.is_set():
            t = time.monotonic() - self._t0
            out = subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout
            conns = [c for c in parse_ss(out) if c.get("bytes_acked")]
            if conns:
                best = max(conns, key=lambda c: c["bytes_acked"])
                self.samples.append({"t": round(t, 2), **best})
            self._stop.wait(self.interval)


def save(samples: list[dict], path: Path, label: str) -> Path:
    """Writes the raw samples as JSON lines to ``path`` with ``-<label>`` before its suffix."""
    out = path.with_name(f"{path.stem}-{label}{path.suffix}")
    out.write_text("".join(json.dumps(sample, sort_keys=True) + "\n" for sample in samples))
    return out


def summarise(samples: list[dict], rate_mbit: float) -> dict:
    """Ramp and steady-phase figures of the busiest connection's samples."""
    if len(samples) < 3:
        return {"samples": len(samples)}
    rates = []  # (t, Mbit/s) between consecutive samples
    for prev, cur in itertools.pairwise(samples):
        dt = cur["t"] - prev["t"]
        if dt > 0 and cur.get("local") == prev.get("local"):
            rates.append((cur["t"], (cur["bytes_acked"] - prev["bytes_acked"]) * 8 / dt / 1e6))
    first_data = next((s["t"] for s in samples if s.get("bytes_acked", 0) > 1e6), None)
    at_90 = next((t for t, r in rates if r >= 0.9 * rate_mbit), None)
    steady = [(t, r) for t, r in rates if at_90 is not None and t > at_90 + 2]
    steady = steady[:-2]  # the tail drains
    last = samples[-1]
    busy = last.get("busy_ms") or 0.0
    app = [s for s in samples if at_90 is not None and s["t"] > at_90 + 2]
    return {
        "samples": len(samples),
        "first_data_s": first_data,
        "reaches_90pct_s": at_90,
        "steady_mbit_median": _median([r for _, r in steady]),
        "steady_below_90pct_fraction": _fraction([r < 0.9 * rate_mbit for _, r in steady]),
        "steady_app_limited_fraction": _fraction([bool(s.get("app_limited")) for s in app]),
        "rwnd_limited_fraction": (last.get("rwnd_limited_ms", 0.0) / busy) if busy else None,
        "sndbuf_limited_fraction": (last.get("sndbuf_limited_ms", 0.0) / busy) if busy else None,
        "retransmits": last.get("retrans_total", 0.0),
        "rtt_ms_steady_median": _median([s.get("rtt_ms", 0.0) for s in app]),
        "cwnd_bytes_steady_median": _median([s.get("cwnd", 0.0) * s.get("mss", 1448.0) for s in app]),
    }


def _median(values: list[float]) -> float | None:
    return sorted(values)[len(values) // 2] if values else None


def _fraction(flags: list[bool]) -> float | None:
    return sum(flags) / len(flags) if flags else None
