"""bench/wan/copy_rate.py's smoke run, as a user runs it (on a state of its own, tiny sizes): one iperf3 flow
and the worker's root:// and davs:// copies of the same bytes across an emulated path, then what a site would
otherwise use (XRootD's own third-party copy, xrdcp with parallel chunks, gfal-copy over davs://) on stock
servers at the same ends; each copy verified at both ends and set against the flow. The figures themselves
are in docs/benchmarks.md (16 GiB at 10 Gbit/s); this keeps the script working."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PYTHON = REPO / ".venv" / "bin" / "python"
SCRIPT = REPO / "bench" / "wan" / "copy_rate.py"


@pytest.mark.wan_timeout(420)
def test_the_copy_rate_benchmark_runs_and_accounts_for_each_copy(tmp_path: Path) -> None:
    out = tmp_path / "rate.json"
    run = subprocess.run(
        [
            str(PYTHON),
            str(SCRIPT),
            *("--rtt-ms", "40", "--rate-mbit", "1000", "--size-gib", "0.0625", "--protocols", "root,davs"),
            *("--compare", "stock-tpc,xrdcp,gfal-davs"),
            *("--tokens", "on", "--state", "bench-copy-rate-smoke", "--out", str(out)),
        ],
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert run.returncode == 0, run.stderr[-3000:] + run.stdout[-3000:]
    result = json.loads(out.read_text())
    (measured,) = result["runs"]
    flow = measured["iperf3"]
    # 64 MiB at 1 Gbit/s: at least half a second on the wire, and not faster than the path.
    assert 0.1 < flow["gbit_s"] <= 1.0 and flow["seconds"] > 0.5, flow
    for protocol in ("root", "davs"):
        copy = measured[protocol]
        source, destination = copy["checksums"]
        assert source == destination and len(source) == 8, copy
        assert copy["bytes"] == 64 << 20 and copy["streams_on_wire"] == 1, copy
        assert 0 < copy["ratio_to_iperf3"] == pytest.approx(copy["gbit_s"] / flow["gbit_s"], abs=0.002), copy
        # The CPU of each part was counted: the emulator forwarded the bytes, both servers worked.
        assert copy["emulator_cpu_s"] > 0 and copy["source_server_cpu_s"] > 0, copy
        assert copy["destination_server_cpu_s"] > 0, copy
        assert copy["sender"]["samples"] >= 1 and copy["emulator_dropped"] >= 0, copy
        assert copy["emulator_tun_dropped"] >= 0, copy
    for tool in ("stock-tpc", "xrdcp", "gfal-davs"):
        copy = measured[tool]
        assert copy["bytes"] == 64 << 20 and copy["checksum_verified"] == source, copy
        assert 0 < copy["ratio_to_iperf3"] == pytest.approx(copy["gbit_s"] / flow["gbit_s"], abs=0.002), copy
        # The stock servers did the work (the plugin's pair sat idle), and the tool ran as a client.
        assert copy["source_server_cpu_s"] > 0 and copy["client_cpu_s"] > 0, copy
    # xrdcp's chunks in flight follow the path: 1 Gbit/s x 40 ms x 1.25 is 6.25 MB, one 8 MiB chunk, plus one.
    assert measured["xrdcp"]["parallel_chunks"] == 2
    copies = ("root", "davs", "stock-tpc", "xrdcp", "gfal-davs")
    assert set(result["summary"]) == {f"{copy}@40ms" for copy in copies}
    assert [line.split("|")[1].strip() for line in result["table"].splitlines()[2:]] == list(copies)


def test_an_unknown_tool_to_compare_is_refused_naming_it() -> None:
    run = subprocess.run(
        [str(PYTHON), str(SCRIPT), "--compare", "xrdcp,scp"], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 2 and "--compare: unknown scp" in run.stderr, run.stderr
