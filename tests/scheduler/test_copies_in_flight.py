"""Copies in flight per lane: each cold copy's dead time (handshakes, the GET, slow start), the copies a lane
needs to stay busy despite it, and how the plan carries that to the transfer service and the lane depth."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from schedulers.lane_load import LaneLoad
from schedulers.planning import PlanConfig, PlanInputError, Product, ReplicaPolicy, plan
from schedulers.planning.dispatch import job_hints
from schedulers.planning.tuning import (
    DEAD_HISTORY,
    HISTORY,
    copies_at_once,
    copy_dead_time_s,
    lane_utilisation,
    measured_dead_time_s,
)
from schedulers.planning.types import LiveState, Measurement
from schedulers.planning.validate import validate_config

from .helpers import one_path

MIB = 2**20
CONFIG = PlanConfig()


def far_path():  # type: ignore[no-untyped-def]
    return one_path(capacity_bps=100e6, rtt_ms=223.0, window_bytes=2**30)


def test_a_cold_copys_dead_time_by_hand() -> None:
    # 97 Mbit/s over 223 ms: a 2.70 MB window, reached from 14480 bytes in 8 doublings (x256 >= x187),
    # while sending 14480 * 255 = 3.69 MB, which at 97 Mbit/s would have taken 0.304 s.
    rtt, share = 0.223, 97e6
    rounds = math.ceil(math.log2(share * rtt / 8 / 14480))
    assert rounds == 8
    expected = 0.2 + 4 * rtt + (rounds * rtt - 14480 * 255 * 8 / share)
    assert copy_dead_time_s(32 * MIB, 223.0, share, CONFIG) == pytest.approx(expected)
    # A file smaller than what slow start sends loses the whole ramp but no more than its own bytes' worth.
    tiny = copy_dead_time_s(100_000, 223.0, share, CONFIG)
    assert tiny == pytest.approx(0.2 + 4 * rtt + rounds * rtt - 100_000 * 8 / share)


def test_a_long_path_with_small_files_needs_more_copies_than_a_short_one() -> None:
    # The long-haul local network's two lanes (bench_reality): 32 MiB files at 97 Mbit/s.
    assert copies_at_once(32 * MIB, 223.0, 97e6, CONFIG) == 3
    assert copies_at_once(32 * MIB, 7.5, 97e6, CONFIG) == 2
    # Large files amortise the start: one copy at a time keeps the long lane busy.
    assert copies_at_once(2**30, 223.0, 97e6, CONFIG) == 1
    # One copy at a time leaves the long lane idle about half the time, three keep it at 99 %.
    assert lane_utilisation(1, 32 * MIB, 223.0, 97e6, CONFIG) == pytest.approx(0.52, abs=0.01)
    assert lane_utilisation(3, 32 * MIB, 223.0, 97e6, CONFIG) >= CONFIG.target_utilisation
    # Never more than max_files, however far the goal is (1 GiB at 97 Gbit/s: each copy's bytes take 89 ms).
    assert copies_at_once(2**30, 223.0, 97e9, CONFIG) == CONFIG.max_files


def test_a_measured_dead_time_longer_than_the_model_asks_for_more_copies() -> None:
    # The model gives 3 copies for 32 MiB at 223 ms; a lane whose copies measured 10 s beyond their bytes
    # (bench_reality's 223 ms lane) needs more. By hand: 33.55 MB at 97 Mbit/s take 2.767 s; with c copies
    # the lane idles (10 / (10 + c * 2.767)) ** c of the time: 16 % with 3, 5.1 % with 4, 1.3 % with 5.
    assert copies_at_once(32 * MIB, 223.0, 97e6, CONFIG, measured_dead_s=10.0) == 5
    assert lane_utilisation(3, 32 * MIB, 223.0, 97e6, CONFIG, measured_dead_s=10.0) == pytest.approx(
        1 - (10 / (10 + 3 * 2.767)) ** 3, abs=1e-3
    )
    # A measured dead time below the model's cold start is not believed: no copy skips its handshakes.
    assert copies_at_once(32 * MIB, 223.0, 97e6, CONFIG, measured_dead_s=0.0) == 3


def test_the_lanes_measured_dead_time_is_the_mean_of_its_own_measurements() -> None:
    ms = [Measurement("T", "A", 2, 50e6, copy_dead_s=dead) for dead in (1.0, 9.0, 4.0)] + [
        Measurement("T", "B", 2, 50e6, copy_dead_s=30.0),
        Measurement("T", "A", 2, 50e6),
    ]
    assert measured_dead_time_s(ms, "T", "A") == pytest.approx(14.0 / 3)
    assert measured_dead_time_s(ms, "T", "B") == 30.0
    assert measured_dead_time_s(ms, "T", "C") is None
    # Only the lane's last DEAD_HISTORY jobs count: its dead time follows its share, which changes as soon
    # as another lane into the access link drains.
    history = [Measurement("T", "A", 2, 50e6, copy_dead_s=0.0)] * 10 + [
        Measurement("T", "A", 2, 50e6, copy_dead_s=13.0)
    ] * DEAD_HISTORY
    assert measured_dead_time_s(history, "T", "A") == 13.0


def test_a_copy_that_ran_on_a_full_link_measures_its_share_not_dead_time() -> None:
    full = replace(Measurement("T", "A", 2, 20e6, copy_dead_s=30.0), link_limited=True)
    assert measured_dead_time_s([full] * 3, "T", "A") is None
    mixed = [Measurement("T", "A", 2, 50e6, copy_dead_s=d) for d in (2.0, 4.0)] + [full]
    assert measured_dead_time_s(mixed, "T", "A") == 3.0


def test_a_copy_older_than_the_judged_history_is_not_read_as_dead_time() -> None:
    """mark_link_limited judges a lane's last HISTORY measurements only: on a link full for longer, the
    older ones (never judged) must not come back as the lane's dead time."""
    old = Measurement("T", "A", 2, 20e6, copy_dead_s=12.0)
    full = replace(Measurement("T", "A", 2, 20e6, copy_dead_s=30.0), link_limited=True)
    assert measured_dead_time_s([old] * 5 + [full] * HISTORY, "T", "A") is None
    # One judged and not full among them is read.
    fresh = Measurement("T", "A", 2, 50e6, copy_dead_s=1.5)
    assert measured_dead_time_s([old] * 5 + [full] * (HISTORY - 1) + [fresh], "T", "A") == 1.5


def test_the_plan_sizes_a_lanes_copies_by_its_measured_dead_time() -> None:
    products = [Product(f"p{i}", "T", 64 * MIB, 0.0, files=2) for i in range(4)]
    path = far_path()
    measured = LiveState(measurements=(Measurement("T", "A", 2, 20e6, copy_dead_s=10.0),) * 3)
    slow = plan(products, path, ReplicaPolicy(), state=measured)
    assert {leg.lane_copies for leg in slow.legs} == {5}
    assert {leg.lane_copies for leg in plan(products, path, ReplicaPolicy()).legs} == {3}


def test_the_plan_gives_the_lane_more_copies_than_a_product_has_files() -> None:
    products = [Product(f"p{i}", "T", 64 * MIB, 0.0, files=2) for i in range(4)]
    far = plan(products, far_path(), ReplicaPolicy())
    near = plan(products, one_path(capacity_bps=100e6, rtt_ms=7.5, window_bytes=2**30), ReplicaPolicy())
    assert {(leg.files, leg.lane_copies) for leg in far.legs} == {(2, 3)}
    assert {(leg.files, leg.lane_copies) for leg in near.legs} == {(2, 2)}
    # A product with one file takes one of the lane's copies; the lane keeps its three.
    single = plan([Product("s", "T", 32 * MIB, 0.0, files=1)], far_path(), ReplicaPolicy()).legs[0]
    assert (single.files, single.lane_copies) == (1, 3)
    # Without the copy model, a lane keeps only one product's files in flight (the plan as it was).
    before = plan(products, far_path(), ReplicaPolicy(), config=PlanConfig(copies_in_flight=False))
    assert {(leg.files, leg.lane_copies) for leg in before.legs} == {(1, 1)}
    hints = job_hints(far.legs[0])
    assert (hints.concurrent_files, hints.lane_files) == (2, 3)
    # The lane's streams are shared by its copies, every copy at least one.
    assert hints.streams_per_file == math.ceil(far.legs[0].streams / 3)


def test_a_lane_with_more_copies_than_a_product_fills_carries_more_products() -> None:
    load = LaneLoad(depth=2)
    lane, other = ("T", "A"), ("T", "B")
    load.deepen(lane, copies=3, files_per_product=2)  # two products fill 3 copies, one more waits behind
    assert load.depth_of(lane) == 3 and load.depth_of(other) == 2
    load.deepen(lane, copies=1, files_per_product=2)  # a later leg needing less does not make it shallower
    assert load.depth_of(lane) == 3
    assert load.room() == {lane: 3}
    for _ in range(2):
        load.take(lane)
        load.take(other)
    assert not load.is_full(lane) and load.is_full(other)
    assert load.full() == {other} and load.room() == {lane: 1, other: 0}
    # SRCNET_LANE_DEPTH=1 (one product at a time): a lane deepens only as far as its copies need.
    single = LaneLoad(depth=1)
    single.deepen(lane, copies=3, files_per_product=2)
    assert single.depth_of(lane) == 2


@pytest.mark.parametrize(
    "field, value",
    [("copy_overhead_s", -0.1), ("copy_setup_rtts", float("nan")), ("initial_window_bytes", 0.0)],
)
def test_a_bad_copy_model_setting_is_refused_by_name(field: str, value: float) -> None:
    with pytest.raises(PlanInputError, match=field):
        validate_config(replace(PlanConfig(), **{field: value}))  # type: ignore[arg-type]
