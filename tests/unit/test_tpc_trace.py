"""The summary of xrdcp-wan's per-read trace (bench/xrootd_plugin/tpc_trace.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_PATH = Path(__file__).resolve().parents[2] / "bench" / "xrootd_plugin" / "tpc_trace.py"
_spec = importlib.util.spec_from_file_location("tpc_trace", _PATH)
assert _spec is not None and _spec.loader is not None
tt = importlib.util.module_from_spec(_spec)
sys.modules["tpc_trace"] = tt  # its dataclasses look their module up while the class is made
_spec.loader.exec_module(tt)

MB = 1_000_000
RTT_MS, RATE_MBIT = 100.0, 80.0  # 10 MB/s: a 1 MB chunk is 0.1 s on the wire; BDP 1 MB


def chunks(arrivals, issued):
    return [tt.Read(i * MB, MB, issued[i], t, t + 0.002) for i, t in enumerate(arrivals)]


def test_back_to_back_chunks_have_no_gaps():
    arrivals = [1.0 + 0.1 * i for i in range(20)]
    issued = [0.0] * 4 + [t for t in arrivals[:16]]  # each read re-issued as one arrives
    s = tt.summarise(chunks(arrivals, issued), RTT_MS, RATE_MBIT)
    assert s["reads"] == 20
    assert s["gaps"] == 0 and s["gap_seconds"] == 0
    assert s["steady_mbit_s"] == 80.0
    assert s["handoff_median_ms"] == 2.0


def test_a_late_request_is_told_from_other_gaps():
    arrivals = [1.0, 1.1, 1.2, 1.6, 1.7, 2.3]
    # chunk 3 was asked for 0.05 s before chunk 2 ended (less than one RTT): a late request;
    # chunk 5 was asked long before, so its 0.5 s gap is the source's or the path's.
    issued = [0.0, 0.0, 0.0, 1.15, 0.5, 0.5]
    s = tt.summarise(chunks(arrivals, issued), RTT_MS, RATE_MBIT)
    assert s["gaps"] == 2
    assert s["late_request_gaps"] == 1
    assert s["late_request_seconds"] == 0.3
    assert s["gap_seconds"] == 0.8


def test_outstanding_bytes_count_reads_between_issue_and_arrival():
    reads = chunks([1.0, 2.0], [0.0, 1.5])
    assert tt.outstanding_bytes(reads, 0.5) == MB
    assert tt.outstanding_bytes(reads, 1.2) == 0
    assert tt.outstanding_bytes(reads, 1.7) == MB
    s = tt.summarise(reads, RTT_MS, RATE_MBIT)
    assert 0.4 < s["time_below_bdp"] < 0.6  # nothing asked for between 1.0 and 1.5 s


def test_phases_are_placed_on_the_client_clock(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("offset,length,issued_s,received_s,handed_s\n")
    Path(f"{trace}.phases").write_text("phase,seconds\nstart_unix_time,1002.5\nsource_open,1.2\nend,40.0\n")
    Path(f"{trace}.client").write_text("client_start_unix,client_end_unix\n1000.0,1044.0\n")
    assert tt.load_phases(trace) == {
        "client_s": 44.0,
        "before_program_s": 2.5,
        "source_open_s": 1.2,
        "end_s": 40.0,
        "after_program_s": 1.5,
    }
    assert tt.load_phases(tmp_path / "missing.csv") == {}
