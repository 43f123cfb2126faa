"""``srcnet bench path``: a topology path emulated in network namespaces, a real file across it."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from cli.commands import bench as bench_command
from cli.exit_codes import ExitCode
from schedulers.models import PathMeasurement


def _namespaces() -> set[str]:
    """The emulated paths' namespaces of this process (the CLI runs in it): another pytest worker's paths,
    made meanwhile, are not this test's to count."""
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    ours = f"srcnet-wan-{os.getpid()}-"
    return {line.split()[0] for line in out.splitlines() if line.startswith(ours)}


@pytest.fixture(autouse=True)
def _issuer_running(token_issuer):  # type: ignore[no-untyped-def]
    """The session's issuer (the CLI's, by SRCNET_STATE) runs before the CLI asks it; the session stops it."""


def _bench_lane(srcnet, *options: str) -> tuple[dict, str]:
    """`srcnet bench path SKA1-Low AUSRC` (7.5 ms) at 200 Mbit/s with these options: its JSON report and
    its stderr; it must succeed."""
    result = srcnet(
        "bench", "path", "SKA1-Low", "AUSRC", "--once", "--rate-mbit", "200", *options, "-o", "json"
    )
    assert result.code == ExitCode.OK, result.err
    return json.loads(result.out), result.err


def test_bench_path_copies_across_the_emulated_path_and_cleans_up(srcnet, topology):
    before = _namespaces()
    report, err = _bench_lane(srcnet, "--size", "8M", "--record")
    assert report["path"] == "SKA1-Low--AUSRC" and report["rtt_ms"] == 7.5
    assert report["emulated_mbit"] == 200 and report["bytes"] == 8_000_000
    assert report["adler32_match"] is True
    # The copy cannot beat the emulated bottleneck (a little slack for the rate's packet overheads).
    assert 0 < report["fraction_of_bottleneck"] <= 1.05
    assert "scaled down" in err
    # By default as the platform moves data: a third-party copy between plugin sites, the source's
    # connection paced at the emulated bottleneck (200 Mbit/s = 25 MB/s), as its log shows.
    assert (report["mode"], report["server"], report["mtu"]) == ("tpc", "plugin", 1500)
    assert report["pacing_bytes_per_s"] == 25_000_000 and report["source_paced"] is True
    assert report["hystart"] in (True, False)
    assert report["tokens"] is True  # both sites enforce the issuer's tokens, the copy carries them
    # Recorded where the planner's tuning model reads the lane's history.
    (measurement,) = PathMeasurement.objects.filter(source="SKA1-Low", destination="AUSRC")
    assert measurement.bytes == 8_000_000
    assert measurement.throughput_bps == pytest.approx(report["mbit_per_s"] * 1e6)
    assert measurement.job_id == "srcnet bench path (tpc, plugin, MTU 1500)"  # how it was measured
    assert _namespaces() == before


def test_bench_path_without_a_path_is_not_found(srcnet, topology):
    result = srcnet("bench", "path", "SKA1-Low", "Atlantis", "--once")
    assert result.code == ExitCode.NOT_FOUND and "no path from SKA1-Low to Atlantis" in result.err


def test_bench_path_bad_size_is_a_usage_error(srcnet, topology):
    result = srcnet("bench", "path", "SKA1-Low", "AUSRC", "--once", "--size", "lots")
    assert result.code == ExitCode.USAGE and "--size" in result.err


def test_bench_path_with_the_stock_server_pulls_unpaced_over_jumbo_frames(srcnet, topology):
    before = _namespaces()
    report, _ = _bench_lane(srcnet, "--size", "4M", "--server", "stock", "--mode", "pull", "--mtu", "9000")
    assert (report["mode"], report["server"], report["mtu"]) == ("pull", "stock", 9000)
    assert report["adler32_match"] is True and report["bytes"] == 4_000_000
    assert report["pacing_bytes_per_s"] is None and report["source_paced"] is False
    assert report["tokens"] is True
    assert _namespaces() == before


def test_bench_path_without_tokens_copies_between_sites_that_enforce_none(srcnet, topology):
    report, _ = _bench_lane(srcnet, "--size", "2M", "--server", "stock", "--no-tokens")
    assert report["tokens"] is False and report["adler32_match"] is True


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--mtu", "20000"], "--mtu: 20000 is not between 576 and 9000"),
        (["--server", "stock", "--no-pacing"], "--no-pacing: only the plugin paces"),
    ],
)
def test_bench_path_bad_options_are_usage_errors(srcnet, topology, extra, message):
    before = _namespaces()
    result = srcnet("bench", "path", "SKA1-Low", "AUSRC", "--once", *extra)
    assert result.code == ExitCode.USAGE and message in result.err
    assert _namespaces() == before


def test_bench_path_with_no_pacing_leaves_the_plugin_source_unpaced(srcnet, topology):
    report, _ = _bench_lane(srcnet, "--size", "2M", "--no-pacing")
    assert (report["mode"], report["server"]) == ("tpc", "plugin") and report["adler32_match"] is True
    assert report["pacing_bytes_per_s"] is None and report["source_paced"] is False


def test_bench_path_with_the_plugin_not_built_says_how_to_get_it(srcnet, topology, monkeypatch, tmp_path):
    load = bench_command._load

    def load_with_an_empty_build(name):
        module = load(name)
        if name == "xrdsite":
            monkeypatch.setattr(module, "PLUGIN_BUILD", str(tmp_path))  # a build without the plugin
        return module

    monkeypatch.setattr(bench_command, "_load", load_with_an_empty_build)
    before = _namespaces()
    result = srcnet("bench", "path", "SKA1-Low", "AUSRC", "--once", "--size", "1M")
    assert result.code == ExitCode.ENVIRONMENT
    assert "XRootD plugin is not built" in result.err and "--server stock" in result.err
    assert _namespaces() == before
