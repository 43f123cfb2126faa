"""What an emulated path's per-packet trace (``wanemu --trace``, src/pkttrace.h) says about one copy.

Each line is one TCP packet as it entered the link, stamped with CLOCK_MONOTONIC (the clock every process on
the host reads as ``time.monotonic()``): ``<ns> <ab|ba> <v4|v6> <sport> <dport> <tcp flags> <payload bytes>
<its first four bytes in hex, or ->``. ``ab`` packets go from end A to end B.

A third-party pull moves its data in one direction (from the source's end). Its *data connection* is the
connection that carries the most payload that way; its *first data byte* is the first packet of the first
run of at least ``DATA_RUN_BYTES`` that way on that connection, a run being what one end sends before the
other sends payload again. Handshakes, logins, TLS certificates and open replies are shorter; the first
answer to a read (root://) or to the GET (HTTP) is longer, whenever the file is."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

DATA_RUN_BYTES = 64 * 1024
TCP_SYN, TCP_ACK = 0x02, 0x10


@dataclass(frozen=True)
class Packet:
    t_ns: int
    direction: str  # "ab" or "ba"
    sport: int
    dport: int
    flags: int
    payload: int
    head: str = "-"  # the payload's first four bytes, in hex

    @property
    def connection(self) -> tuple[int, int]:
        """(port at end A, port at end B): the same for both directions of one connection."""
        return (self.sport, self.dport) if self.direction == "ab" else (self.dport, self.sport)

    @property
    def opens(self) -> bool:
        """The connection's first SYN (not its SYN-ACK)."""
        return bool(self.flags & TCP_SYN) and not self.flags & TCP_ACK


def read(path: str, since_ns: int = 0, until_ns: int | None = None) -> list[Packet]:
    """The trace's packets stamped in [since_ns, until_ns]; a torn last line (the emulator still writing) is
    left out."""
    packets = []
    with open(path) as f:
        for line in f:
            fields = line.split()
            if len(fields) != 8 or not line.endswith("\n"):
                continue
            t_ns = int(fields[0])
            if t_ns < since_ns or (until_ns is not None and t_ns > until_ns):
                continue
            packets.append(
                Packet(
                    t_ns, fields[1], int(fields[3]), int(fields[4]), int(fields[5]), int(fields[6]), fields[7]
                )
            )
    return packets


@dataclass(frozen=True)
class DataSpan:
    """When a copy's data crossed the path: its first and last data packets on the data connection."""

    first_ns: int
    last_ns: int
    connection: tuple[int, int]
    bytes: int
    connections_before: int  # connections opened across the path before the first data byte


def data_span(packets: list[Packet], direction: str) -> DataSpan | None:
    """The data connection's span in ``direction`` ("ab": the source is at end A), or None when nothing of
    ``DATA_RUN_BYTES`` crossed that way."""
    sent: dict[tuple[int, int], int] = defaultdict(int)
    for p in packets:
        if p.direction == direction:
            sent[p.connection] += p.payload
    if not sent:
        return None
    connection = max(sent, key=lambda c: sent[c])
    first = last = None
    run_start, run_bytes = None, 0
    for p in packets:
        if p.connection != connection or not p.payload:
            continue
        if p.direction != direction:
            run_start, run_bytes = None, 0  # the other end spoke: a new run starts
            continue
        last = p
        if run_start is None:
            run_start = p
        run_bytes += p.payload
        if first is None and run_bytes >= DATA_RUN_BYTES:
            first = run_start
    if first is None or last is None:
        return None
    opened = sum(1 for p in packets if p.opens and p.t_ns < first.t_ns)
    return DataSpan(first.t_ns, last.t_ns, connection, sent[connection], opened)


# XRootD's request codes (XProtocol.hh), which a request's bytes 2-3 hold: what a root:// copy asks.
XROOTD_REQUESTS = {
    3000: "auth", 3001: "query", 3003: "close", 3006: "protocol", 3007: "login", 3008: "mkdir", 3010: "open",
    3011: "ping", 3013: "read", 3014: "rm", 3016: "sync", 3017: "stat", 3019: "write", 3021: "prepare",
    3022: "statx", 3023: "endsess", 3024: "bind", 3025: "readv", 3026: "pgwrite", 3027: "locate",
    3029: "sigver", 3030: "pgread",
}  # fmt: skip


def describe(head: str) -> str:
    """What a payload's first four bytes say it is: an XRootD request (``kXR_open``), the XRootD handshake,
    a TLS record (``tls:handshake``, ``tls:data``: HTTPS hides its method), plain text (an HTTP method), or
    the bytes themselves."""
    if head == "-" or len(head) != 8:
        return head
    raw = bytes.fromhex(head)
    if raw == bytes(4):
        return "handshake"
    code = int.from_bytes(raw[2:4], "big")
    if code in XROOTD_REQUESTS:
        return f"kXR_{XROOTD_REQUESTS[code]}"
    if raw[0] in (0x16, 0x17, 0x15, 0x14) and raw[1] == 0x03:
        return {0x16: "tls:handshake", 0x17: "tls:data", 0x15: "tls:alert", 0x14: "tls:cipher"}[raw[0]]
    if all(0x41 <= b <= 0x5A or b == 0x20 for b in raw):
        return raw.decode()
    return head


def timeline(packets: list[Packet], since_ns: int) -> str:
    """The packets that carry something (a SYN, a FIN, payload) as text, one per line: milliseconds since
    ``since_ns``, direction, connection (port at A, port at B), flags, payload bytes and what the first
    packet's payload is (``describe``; a response's is its stream id and status); runs of payload one way
    on one connection are folded into one line (first time, packets, bytes)."""
    lines = ["ms dir a_port b_port flags packets bytes what"]
    folded: tuple[str, tuple[int, int]] | None = None
    count = total = 0
    start = 0
    flags = 0
    head = "-"

    def flush() -> None:
        if folded is not None:
            (direction, (a_port, b_port)), ms = folded, (start - since_ns) / 1e6
            what = describe(head)
            lines.append(f"{ms:.1f} {direction} {a_port} {b_port} {flags:#04x} {count} {total} {what}")

    for p in packets:
        if not p.payload and not p.flags & 0x03:  # a bare ACK says nothing here
            continue
        key = (p.direction, p.connection)
        if p.payload and not p.flags & 0x03 and key == folded:
            count, total = count + 1, total + p.payload
            continue
        flush()
        folded, count, total, start, flags, head = key, 1, p.payload, p.t_ns, p.flags, p.head
        if p.flags & 0x03:  # SYN or FIN lines are never folded into
            flush()
            folded = None
    flush()
    return "\n".join(lines) + "\n"
