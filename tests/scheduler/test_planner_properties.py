"""Planner properties over random queues, capacities, budgets and policies (hypothesis)."""

from __future__ import annotations

import math
import random
from collections import defaultdict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedulers.planning import (
    LegRole,
    Plan,
    PlanConfig,
    PlanInputError,
    PlanMode,
    PolicyKind,
    Product,
    ReplicaPolicy,
    Topology,
    plan,
)
from schedulers.planning.policies import partner_of

from .helpers import star

EPS = 1e-6

POLICIES = {
    "one": ReplicaPolicy(relays={"T1": "Z", "T2": "Z"}),
    "two": ReplicaPolicy(PolicyKind.TWO_REPLICAS, relays={"T1": "Z", "T2": "Z"}),
    "full": ReplicaPolicy(PolicyKind.FULL_COPY, copy_site="A", relays={"T1": "Z", "T2": "Z"}),
    "dist": ReplicaPolicy(PolicyKind.DISTRIBUTION, relays={"T1": "Z", "T2": "Z"}, relay_all=True),
}


@st.composite
def cases(draw):  # type: ignore[no-untyped-def]
    names = ["x-T1", "x-T2", "x-A", "x-B", "x-C", "x-D", "x-Z"]
    capacity = {n: draw(st.sampled_from([10e9, 40e9, 100e9])) for n in names}
    topology = star(
        capacity=capacity,
        budget_bps=draw(st.sampled_from([5e9, 20e9, 50e9])),
        peak_bps=draw(st.sampled_from([30e9, 70e9])),
        buffer_bytes=draw(st.sampled_from([2e12, 2e15])),  # small buffers exercise the degrade steps
    )
    n = draw(st.integers(min_value=1, max_value=40))
    products = [
        Product(
            f"p{i}",
            draw(st.sampled_from(["T1", "T2"])),
            draw(st.floats(min_value=1e9, max_value=200e9)),
            draw(st.floats(min_value=0, max_value=3600)),
            draw(st.integers(min_value=1, max_value=5)),
            files=draw(st.integers(min_value=1, max_value=10)),
        )
        for i in range(n)
    ]
    policy = POLICIES[draw(st.sampled_from(sorted(POLICIES)))]
    mode = draw(st.sampled_from(list(PlanMode)))
    return topology, products, policy, PlanConfig(mode=mode, slot_seconds=60.0, subslots=6)


def _constraint_usage(
    topology: Topology, plan_: Plan, rates: dict[tuple[str, str], float]
) -> dict[str, float]:
    """Load on every directed link, site peak and per-telescope budget when lanes send at ``rates``."""
    usage: dict[str, float] = defaultdict(float)
    lanes = {lane.key: lane for lane in plan_.lanes}
    for key, rate in rates.items():
        lane = lanes[key]
        path = topology.path(*key)
        assert path is not None
        for c in topology.directed_links(path):
            usage[c] += rate
        usage[f"peak:{lane.destination}"] += rate
        if lane.telescope is not None:
            usage[f"budget:{lane.telescope}:{lane.destination}"] += rate
    return usage


def _limits(topology: Topology) -> dict[str, float]:
    limits = {k: cap for k, (_, cap) in topology.link_constraints().items()}
    for s in topology.sites:
        limits[f"peak:{s.name}"] = s.peak_bps
        for t in topology.telescopes:
            limits[f"budget:{t.name}:{s.name}"] = s.budget_per_telescope_bps
    return limits


def _check_instant(topology: Topology, plan_: Plan, rates: dict[tuple[str, str], float]) -> None:
    limits = _limits(topology)
    for c, load in _constraint_usage(topology, plan_, rates).items():
        assert load <= limits[c] * (1 + EPS) + EPS, f"{c} carries {load:.3e} > {limits[c]:.3e}"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_plan_never_exceeds_a_link_or_a_budget(case) -> None:  # type: ignore[no-untyped-def]
    topology, products, policy, config = case
    result = plan(products, topology, policy, config=config)
    lanes = {lane.key: lane for lane in result.lanes}
    if config.mode == PlanMode.PARALLEL:
        # Sweep every instant a leg starts: the legs in flight then, each at its planned rate.
        legs = [leg for leg in result.legs if math.isfinite(leg.start_s)]
        for at in sorted({leg.start_s for leg in legs}):
            active = [leg for leg in legs if leg.start_s <= at < leg.finish_s]
            per_lane: dict[tuple[str, str], int] = defaultdict(int)
            for leg in active:
                per_lane[(leg.source, leg.destination)] += 1
            assert max(per_lane.values(), default=0) <= 1, "a lane sends one product at a time"
            _check_instant(topology, result, {(leg.source, leg.destination): leg.rate_bps for leg in active})
    else:
        # Slot mode: at every sub-slot, the lanes with an open window at their burst rate, the rest steady.
        sub = config.slot_seconds / config.subslots
        for j in range(config.subslots):
            at = (j + 0.5) * sub
            rates = {}
            for key, lane in lanes.items():
                if lane.windows:
                    rates[key] = sum(
                        w.rate_bps for w in lane.windows if w.offset_s <= at < w.offset_s + w.duration_s
                    )
                elif lane.source not in {t.name for t in topology.telescopes}:
                    rates[key] = lane.rate_bps
            _check_instant(topology, result, rates)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_every_product_gets_exactly_its_replicas(case) -> None:  # type: ignore[no-untyped-def]
    topology, products, policy, config = case
    result = plan(products, topology, policy, config=config)
    srcs = {"A", "B", "C", "D"}
    delivered = defaultdict(list)
    for leg in result.legs:
        if leg.role != LegRole.RELAY:
            delivered[leg.product_id].append(leg.destination)
    assert set(result.replicas) == {p.id for p in products}
    for p in products:
        replicas = result.replicas[p.id]
        primary = replicas[0]
        assert primary in srcs
        if policy.kind == PolicyKind.TWO_REPLICAS:
            expected = [primary, partner_of(policy, topology, primary)]
        elif policy.kind == PolicyKind.FULL_COPY:
            expected = [primary] if primary == "A" else [primary, "A"]
        else:
            expected = [primary]
        assert list(replicas) == expected
        assert sorted(delivered[p.id]) == sorted(expected), "one delivering leg per replica, no more"


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.integers(min_value=0, max_value=2**16))
def test_plan_is_deterministic_whatever_the_input_order(case, seed) -> None:  # type: ignore[no-untyped-def]
    topology, products, policy, config = case
    shuffled = list(products)
    random.Random(seed).shuffle(shuffled)
    assert plan(products, topology, policy, config=config) == plan(shuffled, topology, policy, config=config)


@settings(max_examples=40, deadline=None)
@given(
    st.one_of(st.floats(max_value=0.0), st.just(math.nan), st.just(math.inf)),
    st.integers(min_value=0, max_value=5),
)
def test_any_bad_size_is_rejected_naming_the_product(size, position) -> None:  # type: ignore[no-untyped-def]
    products = [Product(f"ok{i}", "T1", 1e9) for i in range(5)]
    products.insert(position, Product("bad", "T2", size))
    with pytest.raises(PlanInputError, match=r"size_bytes of product bad"):
        plan(products, star(), ReplicaPolicy())


@settings(max_examples=40, deadline=None)
@given(st.text(alphabet="QRSVWY", min_size=1, max_size=6))
def test_any_unknown_site_in_a_policy_is_rejected_naming_it(name) -> None:  # type: ignore[no-untyped-def]
    for policy, field in (
        (ReplicaPolicy(PolicyKind.FULL_COPY, copy_site=name), "copy_site"),
        (ReplicaPolicy(PolicyKind.TWO_REPLICAS, partners={"A": name}), "partners"),
        (ReplicaPolicy(PolicyKind.DISTRIBUTION, relays={"T1": name}), "relays"),
    ):
        with pytest.raises(PlanInputError, match=rf"{field}: unknown site '{name}'"):
            plan([Product("p", "T1", 1e9)], star(), policy)
