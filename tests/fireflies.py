"""SciTags fireflies for the tests: the JSON document and its datagram, in the two senders' shapes the
collector must read (XRootD's pmark: "<134>1 - <host> xrootd - firefly-json - {...}"; flowd-go: a
timestamp in the header), or without a header."""

from __future__ import annotations

import json
from typing import Any

START = "2026-11-29T01:00:00.000000+00:00"
END = "2026-11-29T01:00:42.500000+00:00"


def firefly(
    state: str = "start",
    *,
    experiment: int = 20,
    activity: int = 3,
    src: str = "10.0.0.1",
    dst: str = "10.0.0.2",
    src_port: int = 1094,
    dst_port: int = 40000,
    received: int | None = 0,
    sent: int | None = 0,
    rtt: float | None = 0.15,
) -> dict[str, Any]:
    """A valid firefly document (the schema's fields, in XRootD's order)."""
    lifecycle: dict[str, Any] = {"state": state, "current-time": START, "start-time": START}
    if state == "end":
        lifecycle["end-time"] = END
    document: dict[str, Any] = {"version": 1, "flow-lifecycle": lifecycle}
    if received is not None or sent is not None:
        usage = {"received": received, "sent": sent}
        document["usage"] = {key: value for key, value in usage.items() if value is not None}
    if rtt is not None:
        document["netlink"] = {"rtt": rtt}
    document["context"] = {"experiment-id": experiment, "activity-id": activity, "application": "xrootd"}
    document["flow-id"] = {
        "afi": "ipv6" if ":" in src else "ipv4",
        "src-ip": src,
        "dst-ip": dst,
        "protocol": "tcp",
        "src-port": src_port,
        "dst-port": dst_port,
    }
    return document


def datagram(document: dict[str, Any], *, header: str = "xrootd") -> bytes:
    """The document as a sender puts it on the wire: ``header`` "xrootd", "flowd-go" or "none"."""
    body = json.dumps(document, separators=(",", ":"))
    if header == "xrootd":
        return f"<134>1 - storage.example.org xrootd - firefly-json - {body}".encode()
    if header == "flowd-go":
        return f"<134>1 2026-11-29T01:00:00.1+00:00 dtn.example.org flowd-go - firefly-json - {body}".encode()
    assert header == "none", header
    return body.encode()
