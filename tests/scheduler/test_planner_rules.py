"""Planner rules on hand-made cases: bad input, shares, deadlines, backpressure, lane rates, slot mode."""

from __future__ import annotations

import math

import pytest

from schedulers.planning import (
    DegradeStep,
    LegRole,
    LiveState,
    PlanConfig,
    PlanInputError,
    PlanMode,
    PolicyKind,
    Product,
    ReplicaPolicy,
    plan,
)
from schedulers.planning.allocation import progressive_fill
from schedulers.planning.lanes import build_lanes
from schedulers.planning.types import PathSpec, Topology

from .helpers import star


def test_negative_size_is_rejected_naming_the_field_and_product() -> None:
    with pytest.raises(PlanInputError, match=r"size_bytes of product p1"):
        plan([Product("p1", "T1", -5.0)], star(), ReplicaPolicy())


def test_unknown_telescope_is_rejected_naming_the_site() -> None:
    with pytest.raises(PlanInputError, match=r"telescope of product p1: unknown site 'Nowhere'"):
        plan([Product("p1", "Nowhere", 1e9)], star(), ReplicaPolicy())


def test_policy_naming_an_unknown_site_is_rejected() -> None:
    with pytest.raises(PlanInputError, match=r"copy_site: unknown site 'ESRC'"):
        plan([Product("p1", "T1", 1e9)], star(), ReplicaPolicy(PolicyKind.FULL_COPY, copy_site="ESRC"))


def test_policy_naming_a_site_with_no_path_is_rejected() -> None:
    topo = star()
    # Remove every path into A from the other SRCs: A is then no full-copy site.
    cut = Topology(
        topo.telescopes,
        topo.sites,
        topo.links,
        tuple(p for p in topo.paths if not (p.destination == "A" and p.source in "BCD")),
        topo.window_bytes,
    )
    with pytest.raises(PlanInputError, match=r"copy_site: no path from B to A"):
        plan([Product("p1", "T1", 1e9)], cut, ReplicaPolicy(PolicyKind.FULL_COPY, copy_site="A"))


def test_partner_with_no_path_is_rejected() -> None:
    topo = star()
    cut = Topology(
        topo.telescopes,
        topo.sites,
        topo.links,
        tuple(p for p in topo.paths if (p.source, p.destination) != ("A", "B")),
        topo.window_bytes,
    )
    with pytest.raises(PlanInputError, match=r"partners: no path from A to B"):
        plan([Product("p1", "T1", 1e9)], cut, ReplicaPolicy(PolicyKind.TWO_REPLICAS, partners={"A": "B"}))


def test_a_share_site_no_telescope_reaches_is_rejected() -> None:
    topo = star()
    cut = Topology(
        topo.telescopes,
        topo.sites,
        topo.links,
        tuple(p for p in topo.paths if (p.source, p.destination) != ("T2", "C")),
        topo.window_bytes,
    )
    with pytest.raises(PlanInputError, match=r"no path from T2 to C"):
        plan([Product("p1", "T1", 1e9)], cut, ReplicaPolicy())


def test_path_through_an_unknown_link_is_rejected() -> None:
    topo = star()
    bad = Topology(
        topo.telescopes,
        topo.sites,
        topo.links,
        (*topo.paths, PathSpec("T1", "Q", ("x-T1",))),
        topo.window_bytes,
    )
    with pytest.raises(PlanInputError, match=r"unknown site 'Q'"):
        plan([], bad, ReplicaPolicy())


def test_plan_input_error_is_a_value_error() -> None:
    assert issubclass(PlanInputError, ValueError)


def test_weighted_share_splits_volume_by_weight() -> None:
    products = [Product(f"p{i:03d}", "T1", 10e9, i * 10.0) for i in range(450)]
    result = plan(products, star(), ReplicaPolicy())
    volume = {s: 0.0 for s in "ABCD"}
    for p in products:
        volume[result.replicas[p.id][0]] += p.size_bytes
    total = sum(volume.values())
    weights = {"A": 2.0, "B": 1.0, "C": 1.0, "D": 0.5}
    for site, w in weights.items():
        assert volume[site] / total == pytest.approx(w / 4.5, abs=10e9 / total + 1e-9)


def test_lane_rates_split_the_target_by_share() -> None:
    lanes = build_lanes(ReplicaPolicy(), star(budget_bps=100e9, peak_bps=100e9), LiveState(), PlanConfig())
    out_of_t1 = {k[1]: lane.rate_bps for k, lane in lanes.items() if k[0] == "T1"}
    assert sum(out_of_t1.values()) == pytest.approx(97e9)
    assert out_of_t1["A"] == pytest.approx(97e9 * 2 / 4.5)


def test_a_short_link_gives_its_capacity_to_the_other_lanes() -> None:
    lanes = build_lanes(
        ReplicaPolicy(),
        star(capacity={"x-A": 10e9}, budget_bps=100e9, peak_bps=100e9),
        LiveState(),
        PlanConfig(),
    )
    # x-A carries T1->A and T2->A (one direction): 5 Gbit/s each; the target is made up elsewhere.
    assert lanes[("T1", "A")].rate_bps == pytest.approx(5e9)
    assert sum(lane.rate_bps for k, lane in lanes.items() if k[0] == "T1") == pytest.approx(97e9)


def test_a_tight_deadline_moves_the_product_to_a_lane_that_meets_it() -> None:
    # A is furthest below its share but its lane is busy for an hour; B can deliver at once.
    state = LiveState(lane_busy_until_s={("T1", "A"): 3600.0})
    result = plan([Product("p1", "T1", 10e9, 0.0, deadline_s=120.0)], star(), ReplicaPolicy(), state)
    assert result.replicas["p1"][0] != "A"
    assert result.legs[0].finish_s <= 120.0


def test_backpressure_defers_second_copies_then_relays_and_says_so() -> None:
    topo = star(buffer_bytes=1e12)
    products = [Product(f"p{i:03d}", "T1", 50e9, 0.0) for i in range(60)]
    policy = ReplicaPolicy(PolicyKind.TWO_REPLICAS, relays={"T1": "Z", "T2": "Z"})
    result = plan(products, topo, policy)
    details = [e.detail for e in result.events if e.kind == "degrade"]
    assert any(DegradeStep.DEFER_SECOND_COPIES.value in d for d in details)
    assert any(DegradeStep.RELAY.value in d for d in details)
    assert any(leg.role == LegRole.RELAY for leg in result.legs)
    # A deferred second copy goes at the lowest priority, after the first copies have left.
    deferred = [leg for leg in result.legs if leg.role == LegRole.SECOND and leg.priority == 1]
    assert deferred
    assert result.degraded_level["T1"] == 2


def test_buffer_recovering_returns_to_the_full_policy() -> None:
    topo = star(buffer_bytes=1e12)
    burst = [Product(f"a{i:03d}", "T1", 50e9, 0.0) for i in range(40)]
    later = [Product("z", "T1", 1e9, 7200.0)]
    result = plan(burst + later, topo, ReplicaPolicy(PolicyKind.TWO_REPLICAS, relays={"T1": "Z"}))
    assert [e.kind for e in result.events][-1] == "recover"
    assert result.degraded_level["T1"] == 0


def test_zero_capacity_lane_leaves_the_leg_for_the_next_plan() -> None:
    topo = star(capacity={"x-B": 0.0})
    result = plan(
        [Product("p1", "T1", 1e9)], topo, ReplicaPolicy(PolicyKind.TWO_REPLICAS, partners={"A": "B"})
    )
    second = [leg for leg in result.legs if leg.role == LegRole.SECOND]
    assert second and second[0].destination == "B"
    assert math.isinf(second[0].start_s) and second[0].start_slot == -1


def test_slot_mode_runs_a_few_lanes_at_full_rate() -> None:
    topo = star(srcs={s: 1.0 for s in "ABCDEFGHIJ"}, centre=None, capacity={}, budget_bps=20e9)
    lanes = build_lanes(ReplicaPolicy(), topo, LiveState(), PlanConfig(mode=PlanMode.SLOT, subslots=10))
    burst = [lane for k, lane in lanes.items() if k[0] == "T1"]
    # Ten lanes, 100 Gbit/s access, 20 Gbit/s budgets: five at a time, each at its budget.
    for j in range(10):
        at = (j + 0.5) * 6.0
        open_ = [w for lane in burst for w in lane.windows if w.offset_s <= at < w.offset_s + w.duration_s]
        assert len(open_) <= 5
        assert all(w.rate_bps <= 20e9 + 1 for w in open_)
    assert sum(lane.rate_bps for lane in burst) == pytest.approx(97e9, rel=0.05)


def test_progressive_fill_by_hand() -> None:
    # Two flows share c (10); flow 0 also uses d (3): flow 0 stops at 3, flow 1 takes the other 7.
    rates = progressive_fill([1.0, 1.0], [100.0, 100.0], [["c", "d"], ["c"]], {"c": 10.0, "d": 3.0})
    assert rates == pytest.approx([3.0, 7.0])
    # Proportional growth: weights 1 and 3 over a capacity of 8 give 2 and 6.
    assert progressive_fill([1.0, 3.0], [100.0, 100.0], [["c"], ["c"]], {"c": 8.0}) == pytest.approx(
        [2.0, 6.0]
    )


def test_a_leg_with_no_lane_capacity_is_carried_over_to_the_next_plan() -> None:
    policy = ReplicaPolicy(PolicyKind.TWO_REPLICAS, partners={"A": "B"})
    first = plan([Product("p1", "T1", 1e9)], star(capacity={"x-B": 0.0}), policy)
    (stuck,) = [leg for leg in first.legs if not math.isfinite(leg.start_s)]
    later = plan([], star(), policy, LiveState(now_s=900.0), carry_over=[stuck])
    (again,) = later.legs
    assert (again.product_id, again.role, again.source, again.destination) == ("p1", LegRole.SECOND, "A", "B")
    assert again.start_s == 900.0 and again.size_bytes == 1e9 and again.depends_on is None


def test_carrying_over_a_leg_with_no_lane_is_rejected() -> None:
    policy = ReplicaPolicy(PolicyKind.TWO_REPLICAS, partners={"A": "B"})
    leg = plan([Product("p1", "T1", 1e9)], star(), policy).legs[1]
    with pytest.raises(PlanInputError, match="carry_over: no lane from A to B"):
        plan([], star(), ReplicaPolicy(), carry_over=[leg])


@pytest.mark.parametrize(
    ("files", "file_bytes"),
    [(2, (1e9,)), (3, (0.5e9, -0.5e9, 1e9)), (2, (0.4e9, 0.4e9)), (2, (0.5e9, float("nan")))],
    ids=["one-size-for-two-files", "a-negative-size", "not-adding-up", "not-a-number"],
)
def test_file_sizes_that_are_not_the_products_files_are_rejected_naming_the_field(
    files: int, file_bytes: tuple[float, ...]
) -> None:
    with pytest.raises(PlanInputError, match=r"file_bytes of product p1"):
        plan([Product("p1", "T1", 1e9, files=files, file_bytes=file_bytes)], star(), ReplicaPolicy())
    # Sizes one per file adding up to the product's are taken.
    plan([Product("p1", "T1", 1e9, files=2, file_bytes=(0.25e9, 0.75e9))], star(), ReplicaPolicy())
