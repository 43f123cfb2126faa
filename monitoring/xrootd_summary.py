"""XRootD's summary monitoring (``xrd.report``): one UDP packet of XML per report, parsed into counters.

Pure: no Django, no sockets; ``xrootd_exporter.py`` receives the packets and exports what this returns.
The fields are those of XRootD 5's summary format (``<statistics>`` with ``<stats id="link">``,
``"xrootd"``, ``"ofs"``, ``"oss"``, ``"sched"``, ``"proc"``); a section a server does not send is absent."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

# The request counters of <stats id="xrootd"><ops>, by XRootD's own names.
OPERATIONS = ("open", "rf", "rd", "pr", "rv", "rs", "wv", "ws", "wr", "sync", "getf", "putf", "misc")
TPC_OUTCOMES = {"grnt": "granted", "deny": "denied", "err": "error", "exp": "expired"}


class SummaryError(ValueError):
    """Not an XRootD summary report."""


@dataclass
class SiteSummary:
    """One report of one XRootD server (``ins``: its instance name, the site's name in the local network)."""

    site: str
    time: float
    connections: int | None = None
    connections_total: int | None = None
    bytes_in: int | None = None
    bytes_out: int | None = None
    stalls: int | None = None
    timeouts: int | None = None
    operations: dict[str, int] = field(default_factory=dict)
    errors: int | None = None
    tpc: dict[str, int] = field(default_factory=dict)
    # oss paths: (logical path, total bytes, free bytes)
    space: list[tuple[str, int, int]] = field(default_factory=list)
    threads: int | None = None
    idle_threads: int | None = None
    queued_jobs: int | None = None
    cpu_user_seconds: float | None = None
    cpu_system_seconds: float | None = None


def _int(parent: ET.Element | None, path: str) -> int | None:
    if parent is None:
        return None
    text = parent.findtext(path)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _seconds(parent: ET.Element | None, path: str) -> float | None:
    """XRootD's <s> (seconds) and <u> (microseconds) pair."""
    whole, micro = _int(parent, f"{path}/s"), _int(parent, f"{path}/u")
    return None if whole is None else whole + (micro or 0) / 1e6


def parse_summary(packet: bytes) -> SiteSummary:
    try:
        root = ET.fromstring(packet)
    except ET.ParseError as exc:
        raise SummaryError(f"not XML: {exc}") from exc
    if root.tag != "statistics":
        raise SummaryError(f"not a summary report: <{root.tag}>")
    site = root.get("ins") or root.get("site") or root.get("src") or "unknown"
    try:
        when = float(root.get("tod", "0"))
    except ValueError as exc:
        raise SummaryError("tod is not a time") from exc
    sections = {s.get("id"): s for s in root.findall("stats")}
    summary = SiteSummary(site=site, time=when)
    link = sections.get("link")
    summary.connections = _int(link, "num")
    summary.connections_total = _int(link, "tot")
    summary.bytes_in = _int(link, "in")
    summary.bytes_out = _int(link, "out")
    summary.stalls = _int(link, "stall")
    summary.timeouts = _int(link, "tmo")
    xrootd = sections.get("xrootd")
    for op in OPERATIONS:
        value = _int(xrootd, f"ops/{op}")
        if value is not None:
            summary.operations[op] = value
    summary.errors = _int(xrootd, "err")
    ofs = sections.get("ofs")
    for tag, outcome in TPC_OUTCOMES.items():
        value = _int(ofs, f"tpc/{tag}")
        if value is not None:
            summary.tpc[outcome] = value
    oss = sections.get("oss")
    if oss is not None:
        for path in oss.findall("paths/stats"):
            total, free = _int(path, "tot"), _int(path, "free")
            if total is not None and free is not None:
                # Kilobytes in the report.
                summary.space.append(((path.findtext("lp") or "").strip('"'), total * 1024, free * 1024))
    sched = sections.get("sched")
    summary.threads = _int(sched, "threads")
    summary.idle_threads = _int(sched, "idle")
    summary.queued_jobs = _int(sched, "inq")
    proc = sections.get("proc")
    summary.cpu_user_seconds = _seconds(proc, "usr")
    summary.cpu_system_seconds = _seconds(proc, "sys")
    return summary
