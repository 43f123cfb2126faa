"""The simulator's options for how the real stack moves a leg (SimConfig: paced, cold_every_leg,
rtt_fairness, leg_overhead_s, initial_window_bytes, mtu_bytes), checked by hand on one path; measured
against the long-haul local network by bench/scheduler/bench_reality.py and copy_sharing.py."""

from __future__ import annotations

import pytest

from schedulers.planning import PlanConfig, Product, ReplicaPolicy
from schedulers.simulation.engine import SimConfig, simulate
from schedulers.simulation.flows import Flow, share_links
from schedulers.simulation.measured import measured_stack

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
    assert not config.copies_in_flight and config.mtu_bytes == 0 and config.payload_fraction == 1.0


def plan_of(products: list[Product], topo: object, config: PlanConfig) -> tuple:  # type: ignore[type-arg]
    from schedulers.planning import plan

    return plan(products, topo, ReplicaPolicy(), config=config).legs  # type: ignore[arg-type]


def test_copies_in_flight_move_a_product_file_by_file_on_the_plans_copies() -> None:
    """A lane the plan gives two copies in flight runs a two-file product's files at once, each with half
    the bytes; a product ends with its second file; the next product's files take the slots as they free.
    A 0.1 ms path: slow start is over in about a millisecond, so the arithmetic is bytes over capacity."""
    topo = one_path(capacity_bps=10e9, rtt_ms=0.1, window_bytes=125e6)
    # 10 Gbit/s at 5 Gbit/s a file: two files at once, and the copy model off, so two copies in flight.
    plan = PlanConfig(target_utilisation=1.0, per_file_bps=5e9, copies_in_flight=False)
    products = [Product("p1", "T", 2.5e9, 0.0, files=2), Product("p2", "T", 2.5e9, 0.0, files=2)]

    def delivered(**model: float | bool) -> list[float]:
        config = SimConfig(duration_s=60, plan=plan, paced=False, copies_in_flight=True, **model)  # type: ignore[arg-type]
        result = simulate(topo, ReplicaPolicy(), products, config)
        return [result.records[p].delivered_s["A"] for p in ("p1", "p2")]

    # Each product's two halves share the 10 Gbit/s link: 2 s a product, one after the other.
    assert delivered() == pytest.approx([2.0, 4.0], rel=1e-3)
    assert {leg.lane_copies for leg in plan_of(products, topo, plan)} == {2}
    # A fixed cost per copy: p1's files pay it together, p2's files pay it again once p1's have ended.
    assert delivered(leg_overhead_s=0.5) == pytest.approx([2.5, 5.0], rel=1e-3)


def test_a_products_files_keep_their_own_sizes() -> None:
    """A campaign's files are drawn between a least and a most size (Product.file_bytes): p1's small file
    ends first and p2's first file takes its slot, so p1's large one shares the link until the end. The
    same 10 Gbit/s link and two copies in flight as above."""
    topo = one_path(capacity_bps=10e9, rtt_ms=0.1, window_bytes=125e6)
    plan = PlanConfig(target_utilisation=1.0, per_file_bps=5e9, copies_in_flight=False)
    products = [
        Product("p1", "T", 2.5e9, 0.0, files=2, file_bytes=(0.625e9, 1.875e9)),
        Product("p2", "T", 2.5e9, 0.0, files=2),
    ]
    config = SimConfig(duration_s=60, plan=plan, paced=False, copies_in_flight=True)
    result = simulate(topo, ReplicaPolicy(), products, config)
    # 0-1 s: p1's files at 5 Gbit/s each, the small one done. 1-3 s: p1's large one and p2's first half at
    # 5 Gbit/s each, both done. 3-4 s: p2's second half alone. Split evenly, p1 would end at 2 s.
    assert [result.records[p].delivered_s["A"] for p in ("p1", "p2")] == pytest.approx([3.0, 4.0], rel=1e-3)


def test_copies_in_flight_keep_a_long_lane_of_small_files_busier() -> None:
    """The long-haul UKSRC lane: files of 16-48 MiB, 100 Mbit/s, 223 ms, every copy cold (0.2 s, 4 round
    trips, slow start from 10 segments). One product's files at a time leaves the link idle about half the
    run; the plan's copies in flight keep it far busier."""
    topo = one_path(capacity_bps=100e6, rtt_ms=223.0, window_bytes=2**30)
    sizes = [32, 96, 48, 80, 64, 40, 88, 56, 72, 36, 92, 60]  # MiB, two files each
    products = [Product(f"p{i}", "T", mib * 2**20, 0.0, files=2) for i, mib in enumerate(sizes)]
    model = {"paced": False, "initial_window_bytes": 14480.0, "leg_setup_rtts": 4.0, "leg_overhead_s": 0.2}

    def busy(plan: PlanConfig) -> float:
        config = SimConfig(duration_s=600, bin_s=1.0, plan=plan, copies_in_flight=True, **model)  # type: ignore[arg-type]
        result = simulate(topo, ReplicaPolicy(), products, config)
        end = max(r.delivered_s["A"] for r in result.records.values())
        return sum(result.access_bytes["T"]) * 8 / (100e6 * end)

    one_product, planned = busy(PlanConfig(copies_in_flight=False)), busy(PlanConfig())
    assert one_product < 0.6 and planned > 0.85, (one_product, planned)


def test_a_lanes_extra_dead_time_delays_its_copies_and_is_what_the_simulator_measures() -> None:
    # Paced at the plan's rate on a path whose one stream carries it, a copy takes its bytes at its pace:
    # nothing beyond them but the lane's extra dead time, which its measurement then reports.
    topo = one_path(capacity_bps=10e9, rtt_ms=100.0, window_bytes=125e6)
    products = [Product("p", "T", 1.25e9, 0.0)]
    plain = simulate(topo, ReplicaPolicy(), products, SimConfig(duration_s=60, plan=CONFIG))
    config = SimConfig(duration_s=60, plan=CONFIG, lane_extra_dead_s=(("T", "A", 2.5),))
    slow = simulate(topo, ReplicaPolicy(), products, config)
    assert slow.records["p"].delivered_s["A"] == pytest.approx(plain.records["p"].delivered_s["A"] + 2.5)
    dead = [m.copy_dead_s for m in slow.measurements]
    base = [m.copy_dead_s for m in plain.measurements]
    assert len(dead) == len(base) == 1 and dead[0] is not None and base[0] is not None
    assert dead[0] == pytest.approx(base[0] + 2.5)
    # Another lane's extra dead time does not touch this one.
    other = SimConfig(duration_s=60, plan=CONFIG, lane_extra_dead_s=(("T", "B", 2.5),))
    assert simulate(topo, ReplicaPolicy(), products, other).records["p"].delivered_s["A"] == pytest.approx(
        plain.records["p"].delivered_s["A"]
    )


def test_a_negative_exponent_gives_the_long_path_the_larger_share_as_bbr_does() -> None:
    # rtt_fairness -0.30: the 223 ms stream gets (223 / 7.5) ** 0.30 = 2.77 times as much as the 7.5 ms one.
    short, long = _flow(0.0075, (1 / 0.0075) ** -0.30), _flow(0.223, (1 / 0.223) ** -0.30)
    share_links([short, long], {"l": 100e6}, 0.0)
    assert short.rate_bps + long.rate_bps == pytest.approx(100e6)
    assert long.rate_bps / short.rate_bps == pytest.approx((0.223 / 0.0075) ** 0.30)


def test_the_measured_stack_follows_the_sites_congestion_control() -> None:
    bbr, cubic = measured_stack("bbr"), measured_stack("cubic")
    assert measured_stack() == bbr  # what the dtn_tuning role deploys
    assert float(bbr["rtt_fairness"]) < 0 < float(cubic["rtt_fairness"])
    # The rest is the same cold-copy model (and BBR's standing queue, probing and copies' spread,
    # tests/scheduler/test_standing_queue.py, test_probe_growth.py, test_share_spread.py).
    bbr_only = ("rtt_fairness", "standing_queue", "probe_growth", "probe_rounds", "share_spread")
    assert {k: v for k, v in bbr.items() if k not in bbr_only} == {
        k: v for k, v in cubic.items() if k != "rtt_fairness"
    }
    with pytest.raises(ValueError, match=r"'reno'.*known: cubic, bbr"):
        measured_stack("reno")


@pytest.mark.parametrize("mtu", [1500, 9000])
def test_a_link_carries_payload_at_its_capacity_less_the_headers_of_its_mtu(mtu: int) -> None:
    # 1.25 GB, unpaced, on a 10 Gbit/s link of 0.1 ms (slow start over in about a millisecond) whose
    # packets of ``mtu`` bytes carry mtu - 52 bytes of payload each.
    payload = (mtu - 52) / mtu
    topo = one_path(capacity_bps=10e9, rtt_ms=0.1, window_bytes=125e6)
    config = SimConfig(duration_s=60, bin_s=0.5, plan=CONFIG, paced=False, mtu_bytes=mtu)
    result = simulate(topo, ReplicaPolicy(), [Product("p", "T", 1.25e9, 0.0)], config)
    assert result.records["p"].delivered_s["A"] == pytest.approx(1.0 / payload, rel=1e-3)
    # The access link's bytes are the wire's: full while the product moves, headers included.
    assert result.access_bytes["T"][1] == pytest.approx(0.5 * 10e9 / 8, rel=1e-9)
    assert sum(result.access_bytes["T"]) == pytest.approx(1.25e9 / payload, rel=1e-9)
