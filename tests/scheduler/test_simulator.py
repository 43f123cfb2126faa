"""The simulator on cases checked by hand: one path, known rates, slow start, failures, the streams model."""

from __future__ import annotations

import pytest

from schedulers.planning import (
    LiveState,
    Measurement,
    PlanConfig,
    PlanMode,
    PolicyKind,
    Product,
    ReplicaPolicy,
)
from schedulers.planning.lanes import build_lanes
from schedulers.planning.tuning import correction, stream_ceiling_bps, streams_and_files
from schedulers.simulation.engine import CapacityChange, SimConfig, simulate

from .helpers import one_path, star

CONFIG = PlanConfig(target_utilisation=1.0)


def _ramp_bytes(plateau_bps: float, rtt_s: float) -> float:
    # Ten round trips at plateau * 2**(k - 10), k = 0..9.
    return sum(plateau_bps * 2.0 ** (k - 10) * rtt_s / 8 for k in range(10))


def test_one_product_one_path_finishes_when_the_arithmetic_says() -> None:
    # Window 125 MB over 100 ms is 10 Gbit/s per stream: one stream fills the 10 Gbit/s link.
    topo = one_path(capacity_bps=10e9, rtt_ms=100.0, window_bytes=125e6)
    size = 1.25e9
    result = simulate(
        topo, ReplicaPolicy(), [Product("p", "T", size, 0.0)], SimConfig(duration_s=60, plan=CONFIG)
    )
    ramp = _ramp_bytes(10e9, 0.1)
    expected = 10 * 0.1 + (size - ramp) * 8 / 10e9
    assert result.records["p"].delivered_s["A"] == pytest.approx(expected, rel=1e-9)


def test_back_to_back_products_keep_the_window_open() -> None:
    topo = one_path(capacity_bps=10e9, rtt_ms=100.0, window_bytes=125e6)
    products = [Product("p1", "T", 1.25e9, 0.0), Product("p2", "T", 1.25e9, 0.0)]
    result = simulate(topo, ReplicaPolicy(), products, SimConfig(duration_s=60, plan=CONFIG))
    first = result.records["p1"].delivered_s["A"]
    # No second slow start: the second product takes exactly size / rate.
    assert result.records["p2"].delivered_s["A"] - first == pytest.approx(1.0, rel=1e-9)


def test_slow_start_makes_a_short_file_at_300_ms_take_its_ten_rtt_ramp() -> None:
    topo = one_path(capacity_bps=100e9, rtt_ms=300.0, window_bytes=2**30)
    plateau = stream_ceiling_bps(2**30, 300.0, 0.0, 8948)  # 28.6 Gbit/s
    size = 2e9  # 0.56 s at the plateau
    config = PlanConfig(target_utilisation=plateau / 100e9)  # one stream
    result = simulate(
        topo, ReplicaPolicy(), [Product("p", "T", size, 0.0)], SimConfig(duration_s=60, plan=config)
    )
    took = result.records["p"].delivered_s["A"]
    assert took >= 10 * 0.3
    assert took == pytest.approx(3.0 + (size - _ramp_bytes(plateau, 0.3)) * 8 / plateau, rel=1e-9)
    assert took > 5 * size * 8 / plateau


def test_a_link_down_stalls_its_flows_until_repaired() -> None:
    topo = one_path(capacity_bps=10e9, rtt_ms=1.0, window_bytes=2**30)
    changes = (CapacityChange(2.0, "t-a", 0.0), CapacityChange(12.0, "t-a", 10e9))
    result = simulate(
        topo,
        ReplicaPolicy(),
        [Product("p", "T", 5e9, 0.0)],
        SimConfig(duration_s=120, plan=CONFIG, changes=changes),
    )
    # 4 s of work at 10 Gbit/s, interrupted for 10 s, plus the opening ramp of ten 1 ms round trips.
    done = result.records["p"].delivered_s["A"]
    assert 14.0 < done < 14.1


def test_replanning_moves_new_products_off_a_failed_path() -> None:
    topo = star(srcs={"A": 1.0, "B": 1.0}, centre=None, telescopes=("T1",))
    products = [Product(f"p{i}", "T1", 10e9, 700.0 + i) for i in range(10)]
    changes = (CapacityChange(0.0, "x-A", 0.0),)
    result = simulate(
        topo,
        ReplicaPolicy(),
        products,
        SimConfig(duration_s=3600, replan_s=600, plan=CONFIG, changes=changes),
    )
    assert all(set(r.delivered_s) == {"B"} for r in result.records.values())


def test_access_utilisation_matches_the_bytes_sent() -> None:
    topo = one_path(capacity_bps=10e9, rtt_ms=1.0, window_bytes=2**30)
    result = simulate(
        topo,
        ReplicaPolicy(),
        [Product("p", "T", 10e9, 0.0)],
        SimConfig(duration_s=600, bin_s=300, plan=CONFIG),
    )
    assert sum(result.access_bytes["T"]) == pytest.approx(10e9)
    assert result.access_bytes["T"][1] == 0.0


def test_streams_from_window_over_rtt() -> None:
    # AENEAS: 1 GiB over 303 ms is 28.3 Gbit/s per stream, so 100 Gbit/s needs four streams.
    ceiling = stream_ceiling_bps(2**30, 303.0, 0.0, 8948)
    assert ceiling == pytest.approx(28.35e9, rel=1e-3)
    assert streams_and_files(100e9, ceiling, 8, PlanConfig())[0] == 4


def test_measurements_correct_the_model() -> None:
    ceiling = stream_ceiling_bps(2**30, 303.0, 0.0, 8948)
    history = [Measurement("T", "A", 2, ceiling)] * 3  # two streams delivered one stream's worth
    k = correction(history, "T", "A", ceiling)
    assert k == pytest.approx(0.5)
    assert streams_and_files(100e9, ceiling * k, 8, PlanConfig())[0] == 8
    assert correction(history, "T", "B", ceiling) == 1.0  # another path is not corrected


def test_a_path_far_below_its_physics_is_corrected_down_to_its_measurements() -> None:
    """The long-haul local network's 223 ms lane: one stream delivered 40 Mbit/s against a 38.5 Gbit/s
    window ceiling (its hosts' buffers are not the topology's 1 GiB). k follows (0.001, not the old floor
    of 0.01), so a 50 Mbit/s lane gets two streams instead of one."""
    ceiling = stream_ceiling_bps(2**30, 223.1, 0.0, 8948)
    history = [Measurement("T", "A", 1, 40e6)] * 5
    k = correction(history, "T", "A", ceiling)
    assert k == pytest.approx(40e6 / ceiling) and k < 0.01
    assert streams_and_files(50e6, ceiling * k, 2, PlanConfig())[0] == 2


def test_loss_caps_a_stream_by_mathis() -> None:
    # 1e-6 loss at 100 ms: 1.22 * 8948 B * 8 / (0.1 s * 1e-3) = 873 Mbit/s, far below the window limit.
    assert stream_ceiling_bps(2**30, 100.0, 1e-6, 8948) == pytest.approx(1.22 * 8948 * 8 / 1e-4)


def test_files_follow_the_per_file_rate_and_streams() -> None:
    config = PlanConfig(per_file_bps=10e9, max_streams_per_file=4, max_files=8)
    assert streams_and_files(35e9, 28e9, 10, config) == (2, 4)
    assert streams_and_files(35e9, 28e9, 2, config) == (2, 2)  # no more files than the product has


def test_slot_mode_sends_only_in_the_lane_window_and_restarts_cold() -> None:
    # One telescope, two SRCs, budgets of 100 Gbit/s: one lane at a time, each for half of a 20 s slot.
    topo = star(telescopes=("T1",), srcs={"A": 1.0, "B": 1.0}, centre=None, budget_bps=100e9, peak_bps=100e9)
    config = PlanConfig(mode=PlanMode.SLOT, slot_seconds=20.0, subslots=2)
    rate = 97e9
    size = rate / 8 * 15  # 15 s at the burst rate: it cannot fit in one 10 s window
    result = simulate(
        topo, ReplicaPolicy(), [Product("p", "T1", size, 0.0)], SimConfig(duration_s=60, plan=config)
    )
    lanes = build_lanes(ReplicaPolicy(), topo, LiveState(), config)
    assert [(w.offset_s, w.duration_s, w.rate_bps) for w in lanes[("T1", "A")].windows] == [(0.0, 10.0, rate)]
    assert [(w.offset_s, w.duration_s) for w in lanes[("T1", "B")].windows] == [(10.0, 10.0)]
    # 50 ms path, one stream with a 1 GiB window (171.8 Gbit/s plateau): each window opens cold and
    # loses the difference between the burst rate and the slow-start staircase.
    plateau = stream_ceiling_bps(2**30, 50.0, 0.0, 8948)
    lost = sum(rate - min(rate, plateau * 2.0 ** (k - 10)) for k in range(10)) * 0.05 / rate
    assert result.records["p"].delivered_s["A"] == pytest.approx(25.0 + 2 * lost, rel=1e-9)


def test_a_paced_transfer_does_not_count_against_its_path() -> None:
    ceiling = stream_ceiling_bps(2**30, 100.0, 0.0, 8948)
    paced = [Measurement("T", "A", 1, 5e9, paced_bps=5e9)] * 3  # held to 5 Gbit/s and got it
    assert correction(paced, "T", "A", ceiling) == 1.0
    # Held to 5 Gbit/s and got half of it: the one stream was the limit, so a stream here carries
    # 2.5 Gbit/s (not half of the 85.9 Gbit/s physics ceiling), and 5 Gbit/s needs two streams.
    slow = [Measurement("T", "A", 1, 2.5e9, paced_bps=5e9)] * 3
    k = correction(slow, "T", "A", ceiling)
    assert k == pytest.approx(2.5e9 / ceiling)
    assert streams_and_files(5e9, k * ceiling, 8, PlanConfig())[0] == 2
    # A later transfer that kept up with its pace bounds k from below: the path got better.
    better = [*slow, Measurement("T", "A", 2, 10e9, paced_bps=10e9)]
    assert correction(better, "T", "A", ceiling) == pytest.approx(5e9 / ceiling)


def test_backpressure_in_the_simulator_degrades_then_recovers_and_catches_up() -> None:
    # A 2 TB SDP buffer, both SRC links down for the first 10 minutes: the buffer fills past 80 %,
    # the planner defers second copies, and after the repair it drains, recovers and makes them.
    topo = star(telescopes=("T1",), srcs={"A": 1.0, "B": 1.0}, centre=None, buffer_bytes=2e12)
    products = [Product(f"p{i:03d}", "T1", 25e9, i * 2.0) for i in range(150)]  # 100 Gbit/s for 300 s
    changes = (
        CapacityChange(0.0, "x-A", 0.0),
        CapacityChange(0.0, "x-B", 0.0),
        CapacityChange(600.0, "x-A", 100e9),
        CapacityChange(600.0, "x-B", 100e9),
    )
    policy = ReplicaPolicy(PolicyKind.TWO_REPLICAS)
    result = simulate(
        topo, policy, products, SimConfig(duration_s=7200, replan_s=300, plan=PlanConfig(), changes=changes)
    )
    kinds = [(e.kind, e.detail.split(": ")[-1]) for e in result.events]
    assert ("degrade", "defer_second_copies") in kinds
    assert kinds.index(("degrade", "defer_second_copies")) < [k for k, _ in kinds].index("recover")
    assert all(set(r.delivered_s) == {"A", "B"} for r in result.records.values()), "every second copy made"
