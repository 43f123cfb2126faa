"""The ``ss -tin`` parser and summary of the plugin benchmark (bench/xrootd_plugin/ss_sampler.py)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[2] / "bench" / "xrootd_plugin" / "ss_sampler.py"
_spec = importlib.util.spec_from_file_location("ss_sampler", _PATH)
assert _spec is not None and _spec.loader is not None
ss = importlib.util.module_from_spec(_spec)
sys.modules["ss_sampler"] = ss  # its dataclasses look their module up while the class is made
_spec.loader.exec_module(ss)

# As `ss -tinH state established` prints it (iproute2 6.1), one receiver and one sender.
OUTPUT = """\
99000  0      10.250.2.2:48985 10.250.1.2:1094
\t cubic wscale:10,10 rto:708 rtt:376.1/2.5 ato:40 mss:1448 cwnd:10 bytes_received:100000 rcv_space:65483
0      42     10.250.1.2:1094 10.250.2.2:48985
\t cubic wscale:14,14 rto:680 rtt:377.5/2.1 mss:1448 cwnd:36000 bytes_sent:950000000 \
bytes_acked:900000000 pacing_rate 1.04Gbps delivery_rate 960Mbps app_limited busy:20000ms \
rwnd_limited:100ms(0.5%) unacked:3000 retrans:0/12 notsent:524288 minrtt:300
"""


def test_parse_reads_each_connection_and_its_counters() -> None:
    receiver, sender = ss.parse_ss(OUTPUT)
    assert (receiver["local"], receiver["peer"]) == ("10.250.2.2:48985", "10.250.1.2:1094")
    assert "bytes_acked" not in receiver and receiver["rtt_ms"] == 376.1
    assert (sender["local"], sender["cwnd"], sender["bytes_acked"]) == ("10.250.1.2:1094", 36000, 9e8)
    assert (sender["busy_ms"], sender["rwnd_limited_ms"], sender["retrans_total"]) == (20000, 100, 12)
    assert sender["app_limited"] and not receiver["app_limited"]
    assert (sender["pacing_rate_bps"], sender["delivery_rate_bps"]) == (1.04e9, 960e6)
    assert sender["notsent"] == 524288 and "notsent" not in receiver


def _sample(t: float, acked: float, *, app: bool = True, local: str = "a:1") -> dict:
    return {"t": t, "local": local, "bytes_acked": acked, "app_limited": app, "busy_ms": 1000.0}


def test_summary_finds_the_ramp_and_the_steady_dips() -> None:
    # 1000 Mbit/s bottleneck; 0.5 s samples: nothing for 1 s, a ramp, then 125 MB/s with two dips.
    rates_mbit = [0, 0, 8, 200, 600, 950, 960, 960, 960, 960, 400, 960, 500, 960, 960, 960, 960, 960]
    samples, acked = [], 0.0
    for i, rate in enumerate(rates_mbit):
        acked += rate * 1e6 / 8 * 0.5
        samples.append(_sample(i * 0.5, acked))
    summary = ss.summarise(samples, 1000)
    assert summary["first_data_s"] == 1.5  # the first sample past 1 MB acknowledged
    assert summary["reaches_90pct_s"] == 2.5  # the interval ending at 2.5 s ran at 950
    # Steady: the intervals ending after 2.5 + 2 s, less the last two (the tail): 5.0 to 7.5 s, six
    # intervals, two of which dip (400 and 500).
    assert summary["steady_mbit_median"] == pytest.approx(960)
    assert summary["steady_below_90pct_fraction"] == pytest.approx(2 / 6)
    assert summary["steady_app_limited_fraction"] == 1.0


def test_rates_are_not_taken_across_a_change_of_connection() -> None:
    samples = [
        _sample(0, 0),
        _sample(0.5, 1e6),
        _sample(1.0, 5e8, local="b:2"),  # another connection's counter: not 8 Gbit/s of progress
        _sample(1.5, 5.1e8, local="b:2"),
    ]
    assert ss.summarise(samples, 1000)["reaches_90pct_s"] is None


def test_raw_samples_are_saved_as_json_lines_named_after_the_run(tmp_path: Path) -> None:
    samples = [_sample(0, 0), _sample(0.5, 1e6, app=False)]
    out = ss.save(samples, tmp_path / "pull-ss.jsonl", "tpc-plugin")
    assert out == tmp_path / "pull-ss-tpc-plugin.jsonl"
    assert [json.loads(line) for line in out.read_text().splitlines()] == samples
