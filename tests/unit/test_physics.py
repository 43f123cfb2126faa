"""TCP and path physics against the AENEAS figures."""

import math

import pytest

from topology.physics import (
    bandwidth_delay_product_bytes,
    path_metrics,
    slow_start_seconds,
    streams_needed,
    tcp_ceiling_bps,
)

GIB = 2**30


def test_one_gib_window_at_303_ms_gives_28_3_gbit():
    assert tcp_ceiling_bps(GIB, 303) / 1e9 == pytest.approx(28.35, abs=0.01)
    assert round(tcp_ceiling_bps(GIB, 303) / 1e9, 1) == 28.3


def test_delay_bandwidth_product_of_100g_at_303_ms_is_3_79_gb():
    assert bandwidth_delay_product_bytes(100e9, 303) / 1e9 == pytest.approx(3.7875)


def test_a_1_pb_per_day_push_at_303_ms_needs_four_streams():
    sustained = 1e15 * 8 / 86400  # 92.6 Gbit/s
    assert sustained / 1e9 == pytest.approx(92.59, abs=0.01)
    assert streams_needed(sustained, window_bytes=GIB, rtt_ms=303) == 4


def test_streams_are_capped_by_the_bottleneck():
    assert streams_needed(400e9, window_bytes=GIB, rtt_ms=303, bottleneck_bps=100e9) == 4
    assert streams_needed(1e6, window_bytes=GIB, rtt_ms=303) == 1


def test_exact_multiple_needs_no_extra_stream():
    ceiling = tcp_ceiling_bps(GIB, 100)
    assert streams_needed(2 * ceiling, window_bytes=GIB, rtt_ms=100) == 2


def test_slow_start_is_about_ten_round_trips():
    assert slow_start_seconds(303) == pytest.approx(3.03)


@pytest.mark.parametrize("bad", [0, -1, math.nan, math.inf, "3"])
def test_non_positive_inputs_are_rejected_with_the_name(bad):
    with pytest.raises(ValueError, match="rtt_ms"):
        tcp_ceiling_bps(GIB, bad)


def test_path_metrics_bottleneck_sum_and_loss():
    metrics = path_metrics(
        [(10**11, 7.0, 0.0, 10.0), (4 * 10**10, 49.5, 0.01, 5.0), (10**11, 160.0, 0.02, 1.0)]
    )
    assert metrics.capacity_bps == 40e9
    assert metrics.rtt_ms == pytest.approx(216.5)
    assert metrics.loss_rate == pytest.approx(1 - 0.99 * 0.98)
    assert metrics.opex_eur_per_year == 16.0
