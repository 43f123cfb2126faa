"""``srcnet bench path``: a topology path emulated in network namespaces, a real file across it."""

from __future__ import annotations

import json
import subprocess

import pytest

from cli.exit_codes import ExitCode
from schedulers.models import PathMeasurement


def _namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def test_bench_path_copies_across_the_emulated_path_and_cleans_up(srcnet, topology):
    before = _namespaces()
    result = srcnet(
        "bench",
        "path",
        "SKA1-Low",
        "AUSRC",
        "--once",
        "--size",
        "8M",
        "--rate-mbit",
        "200",
        "--record",
        "-o",
        "json",
    )
    assert result.code == ExitCode.OK, result.err
    report = json.loads(result.out)
    assert report["path"] == "SKA1-Low--AUSRC" and report["rtt_ms"] == 7.5
    assert report["emulated_mbit"] == 200 and report["bytes"] == 8_000_000
    assert report["adler32_match"] is True
    # The copy cannot beat the emulated bottleneck (a little slack for the rate's packet overheads).
    assert 0 < report["fraction_of_bottleneck"] <= 1.05
    assert "scaled down" in result.err
    # Recorded where the planner's tuning model reads the lane's history.
    (measurement,) = PathMeasurement.objects.filter(source="SKA1-Low", destination="AUSRC")
    assert measurement.bytes == 8_000_000
    assert measurement.throughput_bps == pytest.approx(report["mbit_per_s"] * 1e6)
    assert _namespaces() == before


def test_bench_path_without_a_path_is_not_found(srcnet, topology):
    result = srcnet("bench", "path", "SKA1-Low", "Atlantis", "--once")
    assert result.code == ExitCode.NOT_FOUND and "no path from SKA1-Low to Atlantis" in result.err


def test_bench_path_bad_size_is_a_usage_error(srcnet, topology):
    result = srcnet("bench", "path", "SKA1-Low", "AUSRC", "--once", "--size", "lots")
    assert result.code == ExitCode.USAGE and "--size" in result.err
