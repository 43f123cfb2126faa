"""bench/wan/packet_trace.py: where a copy's data starts in the emulator's packet trace, and what its
requests were (the trace's format is what src/pkttrace.c writes; tests/wan/test_copy_rtts.py reads a real
one)."""

from __future__ import annotations

from pathlib import Path

import packet_trace as pt

SYN, SYN_ACK, PSH_ACK, FIN_ACK = 0x02, 0x12, 0x18, 0x11
MS = 1_000_000


def _line(ms: float, direction: str, sport: int, dport: int, flags: int, size: int, head: str = "-") -> str:
    return f"{int(ms * MS)} {direction} v4 {sport} {dport} {flags} {size} {head}\n"


def _write(path: Path, *lines: str, torn: str = "") -> Path:
    path.write_text("".join(lines) + torn)
    return path


def _copy_trace(tmp_path: Path) -> Path:
    """A root:// pull as the trace shows it: the worker's connection (a_port 1094, b_port 5000) with its
    login and open, then the destination's own (b_port 6000): a handshake, a login whose reply is long (a
    TLS certificate would be), an open, a read and its 8 MiB answer, the next read while it arrives."""
    return _write(
        tmp_path / "packets.trace",
        _line(10, "ba", 5000, 1094, SYN, 0),
        _line(20, "ab", 1094, 5000, SYN_ACK, 0),
        _line(30, "ba", 5000, 1094, PSH_ACK, 105, "00000bbf"),
        _line(40, "ab", 1094, 5000, PSH_ACK, 24, "00000000"),
        _line(50, "ba", 6000, 1094, SYN, 0),
        _line(60, "ab", 1094, 6000, SYN_ACK, 0),
        _line(70, "ba", 6000, 1094, PSH_ACK, 44, "00000000"),
        _line(80, "ab", 1094, 6000, PSH_ACK, 3000, "00000000"),
        _line(90, "ba", 6000, 1094, PSH_ACK, 77, "01000bc2"),
        _line(100, "ab", 1094, 6000, PSH_ACK, 101, "01000000"),
        _line(110, "ba", 6000, 1094, PSH_ACK, 32, "02000bc5"),
        *(_line(120 + i, "ab", 1094, 6000, 0x10, 1 << 20) for i in range(4)),
        _line(125, "ba", 6000, 1094, PSH_ACK, 32, "03000bc5"),
        *(_line(130 + i, "ab", 1094, 6000, 0x10, 1 << 20) for i in range(4)),
        _line(140, "ba", 6000, 1094, FIN_ACK, 0),
        torn="150000000 ab v4 1094 6",  # the emulator still writing its last line
    )


def test_the_data_starts_with_the_first_answer_longer_than_any_handshake(tmp_path: Path) -> None:
    packets = pt.read(str(_copy_trace(tmp_path)))
    assert len(packets) == 21  # the torn last line is left out
    span = pt.data_span(packets, "ab")
    assert span is not None
    assert span.connection == (1094, 6000)
    assert span.first_ns == 120 * MS and span.last_ns == 133 * MS
    assert span.bytes == 3000 + 101 + 8 * (1 << 20)
    assert span.connections_before == 2  # the worker's and the destination's own


def test_a_window_of_the_trace_and_no_data_at_all(tmp_path: Path) -> None:
    trace = str(_copy_trace(tmp_path))
    assert [p.t_ns for p in pt.read(trace, since_ns=100 * MS, until_ns=110 * MS)] == [100 * MS, 110 * MS]
    handshakes_only = pt.read(trace, until_ns=110 * MS)
    assert pt.data_span(handshakes_only, "ab") is None
    assert pt.data_span(pt.read(trace), "ba") is None  # nothing of a data run's size went from B to A


def test_the_timeline_names_the_requests_and_folds_a_run(tmp_path: Path) -> None:
    packets = pt.read(str(_copy_trace(tmp_path)))
    lines = pt.timeline(packets, since_ns=10 * MS).splitlines()
    assert lines[0] == "ms dir a_port b_port flags packets bytes what"
    assert "20.0 ba 1094 5000 0x18 1 105 kXR_login" in lines
    assert "80.0 ba 1094 6000 0x18 1 77 kXR_open" in lines
    assert "100.0 ba 1094 6000 0x18 1 32 kXR_read" in lines
    # The four packets of the answer are one line: when it started, how many, how much.
    assert "110.0 ab 1094 6000 0x10 4 4194304 -" in lines
    assert lines[-1] == "130.0 ba 1094 6000 0x11 1 0 -"


def test_what_a_payloads_first_bytes_say() -> None:
    assert pt.describe("00000bc3") == "kXR_ping"
    assert pt.describe("00000000") == "handshake"
    assert pt.describe("16030100") == "tls:handshake"
    assert pt.describe("17030300") == "tls:data"
    assert pt.describe("47455420") == "GET "
    assert pt.describe("deadbeef") == "deadbeef"
    assert pt.describe("-") == "-"
