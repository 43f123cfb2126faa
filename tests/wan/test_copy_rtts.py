"""bench/wan/copy_rtts.py's smoke run, as a user runs it (on a state of its own): a copy as the platform's
worker makes it, over root:// and davs://, between two sites in the deployed configuration (tokens
enforced) across an emulated path, and the round trips it spent before its first data byte, read from the
emulator's packet trace. It fails when they grow beyond what docs/benchmarks.md states ("A copy's round trips
before its first byte"), before the first byte or after the last, or when the copy no longer crosses the path
as a third-party copy does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PYTHON = REPO / ".venv" / "bin" / "python"
SCRIPT = REPO / "bench" / "wan" / "copy_rtts.py"
sys.path.insert(0, str(SCRIPT.parent))

from copy_rtts import ROUND_TRIPS_AFTER_LAST_BYTE, ROUND_TRIPS_TO_FIRST_BYTE  # noqa: E402

SIZE_MIB = 1


@pytest.mark.wan_timeout(600)
def test_a_copys_round_trips_to_its_first_byte_do_not_grow(tmp_path: Path) -> None:
    out = tmp_path / "rtts.json"
    run = subprocess.run(
        [
            str(PYTHON),
            str(SCRIPT),
            *("--rtt-ms", "300", "--low-rtt-ms", "20", "--reps", "3", "--size-mib", str(SIZE_MIB)),
            *("--worker", "b", "--tokens", "on", "--state", "bench-copy-rtts-smoke", "--out", str(out)),
        ],
        capture_output=True,
        text=True,
        timeout=560,
    )
    assert run.returncode == 0, run.stderr[-3000:] + run.stdout[-3000:]
    result = json.loads(out.read_text())
    for protocol, budget in ROUND_TRIPS_TO_FIRST_BYTE.items():
        measured = result[protocol]
        rtts = measured["round_trips"]["to_first_byte"]
        # The destination's own pull alone is a connection, a handshake and a request (and, over root://, a
        # login and an open): fewer round trips would mean the copy did not cross the path as a pull does.
        assert 3 <= rtts <= budget, (protocol, measured["round_trips"], measured["runs"])
        # After the last byte: the destination's answer that the pull ended (half a round trip to a worker at
        # its end); the source's checksum was asked while the copy ran, its close is not waited for.
        after = measured["round_trips"]["after_last_byte"]
        assert after <= ROUND_TRIPS_AFTER_LAST_BYTE[protocol], (protocol, measured["round_trips"])
        for runs in measured["runs"].values():
            for copy in runs:
                # The whole file crossed from the source's end, on one data connection.
                assert copy["data_bytes"] >= SIZE_MIB * 2**20, copy
                assert 0 < copy["to_first_byte_ms"] < copy["total_ms"], copy
        # At 300 ms a round trip is long enough to see: the time to the first byte holds them.
        assert measured["at_high_rtt_ms"]["to_first_byte"] >= rtts * 300 * 0.9, measured
