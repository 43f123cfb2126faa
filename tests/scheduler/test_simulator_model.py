"""The simulator's options for how the real stack moves a leg (SimConfig: paced, cold_every_leg,
rtt_fairness, leg_overhead_s, initial_window_bytes), checked by hand on one path; measured against the
long-haul local network by bench/scheduler/bench_reality.py."""

from __future__ import annotations

import pytest

from schedulers.planning import PlanConfig, Product, ReplicaPolicy
from schedulers.simulation.engine import SimConfig, simulate
from schedulers.simulation.flows import Flow, share_links

from .helpers import one_path

CONFIG = PlanConfig(target_utilisation=1.0)


def _one(size: float, **model: float | bool) -> float:
    # Window 125 MB over 100 ms is 10 Gbit/s per stream: one stream fills the 10 Gbit/s link.
    topo = one_path(capacity_bps=10e9, rtt_ms=100.0, window_bytes=125e6)
    config = SimConfig(duration_s=60, plan=CONFIG, **model)  # type: ignore[arg-type]
    result = simulate(topo, ReplicaPolicy(), [Product("p", "T", size, 0.0)], config)
    return result.records["p"].delivered_s["A"]


def test_a_legs_overhead_delays_it_by_that_much() -> None:
    assert _one(1.25e9, leg_overhead_s=0.7) == pytest.approx(_one(1.25e9) + 0.7, rel=1e-9)


def test_slow_start_from_an_initial_window_doubles_each_rtt_up_to_the_plateau() -> None:
    # 1 Mbit/s in the first round trip (12 500 bytes over 100 ms), doubling: 10 Gbit/s after 14 round trips
    # (2**14 Mbit/s > 10 Gbit/s), having sent sum(2**k for k < 14) * 12 500 bytes by then.
    ramp_bytes = sum(2**k for k in range(14)) * 12_500
    expected = 14 * 0.1 + (1.25e9 - ramp_bytes) * 8 / 10e9
    assert _one(1.25e9, initial_window_bytes=12_500) == pytest.approx(expected, rel=1e-9)


def test_every_leg_cold_makes_back_to_back_products_ramp_each_time() -> None:
    topo = one_path(capacity_bps=10e9, rtt_ms=100.0, window_bytes=125e6)
    products = [Product("p1", "T", 1.25e9, 0.0), Product("p2", "T", 1.25e9, 0.0)]
    config = SimConfig(duration_s=60, plan=CONFIG, cold_every_leg=True)
    result = simulate(topo, ReplicaPolicy(), products, config)
    first = result.records["p1"].delivered_s["A"]
    # The second product ramps again: as long as the first took (both start cold).
    assert result.records["p2"].delivered_s["A"] - first == pytest.approx(first, rel=1e-9)


def _flow(rtt_s: float, weight: float) -> Flow:
    from schedulers.planning.types import Leg, LegRole

    leg = Leg("p", LegRole.PRIMARY, "T", "A", ("l",), 1, 1, 0.0, 0, 0.0, 0.0, 3)
    return Flow(leg, ("T", "A"), ("l",), 1e9, float("inf"), 1e12, rtt_s, None, share_weight=weight)


def test_unpaced_flows_share_a_full_link_by_their_weights() -> None:
    # rtt_fairness 0.25: a 7.5 ms stream against a 223 ms one gets (223 / 7.5) ** 0.25 = 2.33 times as much.
    short, long = _flow(0.0075, (1 / 0.0075) ** 0.25), _flow(0.223, (1 / 0.223) ** 0.25)
    share_links([short, long], {"l": 100e6}, 0.0)
    assert short.rate_bps + long.rate_bps == pytest.approx(100e6)
    assert short.rate_bps / long.rate_bps == pytest.approx((0.223 / 0.0075) ** 0.25)


def test_the_defaults_are_the_model_as_it_was() -> None:
    config = SimConfig()
    assert config.paced and not config.cold_every_leg
    assert config.rtt_fairness == 0.0 and config.leg_overhead_s == 0.0 and config.initial_window_bytes == 0.0
