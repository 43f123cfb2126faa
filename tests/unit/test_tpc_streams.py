"""What a third-party copy runs for the streams it asks (topology/tpc_streams.py; measured by
tests/integration/test_streams_on_the_wire.py)."""

from __future__ import annotations

from topology.tpc_streams import (
    HTTP_TPC_BLOCK_BYTES,
    MAX_STREAMS_PER_FILE,
    streams_on_the_wire,
    streams_per_file,
)

MIB = 1024 * 1024


def test_xrootd_runs_what_is_asked_up_to_fifteen() -> None:
    assert [streams_on_the_wire("root", n, 10 * MIB) for n in (None, 0, 1, 2, 8, 15, 16, 40)] == [
        1, 1, 1, 2, 8, 15, 15, 15,
    ]  # fmt: skip
    assert streams_on_the_wire("xroot", 4) == 4


def test_http_tpc_runs_one_stream_per_16_mib_block_at_most() -> None:
    assert HTTP_TPC_BLOCK_BYTES == 16 * MIB
    assert streams_on_the_wire("davs", 8, 24 * MIB) == 2
    assert streams_on_the_wire("davs", 8, 16 * MIB) == 1
    assert streams_on_the_wire("davs", 8, 16 * MIB + 1) == 2
    assert streams_on_the_wire("https", 8, 128 * MIB) == 8
    assert streams_on_the_wire("davs", 3, 0) == 1
    # A size not known: the streams asked, as davix asks for them.
    assert streams_on_the_wire("davs", 16) == 16


def test_a_lanes_streams_are_shared_by_its_files_and_capped_per_file() -> None:
    assert streams_per_file(8, 2) == 4
    assert streams_per_file(5, 2) == 3  # rounded up: every file gets its share
    assert streams_per_file(1, 4) == 1  # each file at least one
    assert streams_per_file(16, 1) == MAX_STREAMS_PER_FILE == 15
    assert streams_per_file(0, 0) == 1
