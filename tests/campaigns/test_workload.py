"""The campaign workload (pure): the curve, the products that follow it, and the real campaign's tick
by tick generation giving the same products at the same times as the simulated campaign's arrivals."""

from __future__ import annotations

import math
from itertools import islice

import pytest

from campaigns.models import Campaign
from campaigns.scoring import percentile
from campaigns.services import MAX_PRODUCTS_PER_TICK
from campaigns.workload import Workload, seconds_to_plan

GB = 10**9
WORKLOAD = Workload(
    seed=7,
    sources=("SKA1-Low", "SKA1-MID_SDP"),
    destinations=("UKSRC_DISK", "AUSRC_DISK", "UKSRC_DISK"),
    target_rate_bps=40e9,
    ramp_seconds=900,
    duration_seconds=3600,
    min_file_bytes=2 * GB,
    max_file_bytes=6 * GB,
    files_per_product=3,
)


def offered_by(arrivals: list, t: float) -> int:
    return sum(p.size_bytes for at, p in arrivals if at <= t)


def test_the_campaign_model_and_the_workload_share_one_curve():
    c = Campaign(target_rate_bps=8e6, ramp_seconds=10, duration_seconds=100)
    w = Workload(1, ("a",), ("b",), 8e6, 10, 100, 1, 1, 1)
    for t in (0, 3, 10, 55, 100, 400):
        assert c.planned_bytes_at(t) == w.planned_bytes_at(t)
        assert c.target_rate_at(t) == w.target_rate_at(t)
    # The inverse of the curve, on the ramp and after it.
    for at in (0.5, 4.0, 10.0, 77.0):
        assert seconds_to_plan(8e6, 10, w.planned_bytes_at(at)) == pytest.approx(at)


def test_the_products_follow_the_curve_within_one_product():
    arrivals = list(WORKLOAD.arrivals())
    largest = max(p.size_bytes for _, p in arrivals)
    assert [p.index for _, p in arrivals] == list(range(len(arrivals))) and len(arrivals) > 100
    assert all(0 <= t < WORKLOAD.duration_seconds for t, _ in arrivals)
    assert [t for t, _ in arrivals] == sorted(t for t, _ in arrivals)
    for t in [k * 37.0 for k in range(1, 98)] + [WORKLOAD.duration_seconds]:
        planned = WORKLOAD.planned_bytes_at(t)
        assert planned <= offered_by(arrivals, t) <= planned + largest, t
    # On the ramp the products come slower: fewer in the first 900 s than in the next 900 s.
    first = sum(1 for t, _ in arrivals if t < 900)
    assert first < sum(1 for t, _ in arrivals if 900 <= t < 1800) * 0.7
    total = sum(p.size_bytes for _, p in arrivals)
    planned = WORKLOAD.planned_bytes_at(WORKLOAD.duration_seconds)
    assert planned <= total < planned + arrivals[-1][1].size_bytes  # the last product crosses the target


def test_sources_destinations_and_files_are_round_robin_and_within_bounds():
    for _, p in islice(WORKLOAD.arrivals(), 60):
        assert p.source == WORKLOAD.sources[p.index % 2]
        assert p.destination == WORKLOAD.destinations[p.index % 3]
        assert len(p.files) == 3
        assert all(2 * GB <= f.size_bytes <= 6 * GB for f in p.files)
    assert WORKLOAD.destination_shares() == pytest.approx({"UKSRC_DISK": 2 / 3, "AUSRC_DISK": 1 / 3})
    assert WORKLOAD.pairs() == [
        ("SKA1-Low", "UKSRC_DISK"),
        ("SKA1-MID_SDP", "AUSRC_DISK"),
        ("SKA1-MID_SDP", "UKSRC_DISK"),
        ("SKA1-Low", "AUSRC_DISK"),
    ]
    # Reproducible from the seed; another seed, other sizes.
    assert WORKLOAD.product(5) == WORKLOAD.product(5)
    other = Workload(**{**WORKLOAD.__dict__, "seed": 8})
    assert other.product(5).files != WORKLOAD.product(5).files


def test_real_ticks_make_the_same_products_as_the_simulated_arrivals():
    """A real campaign's ticks (every 2 s, at most MAX_PRODUCTS_PER_TICK each) make products 0, 1, ...
    in the order and at the times the simulated campaign's products arrive: each by the first tick at
    or after its arrival, unless the tick's cap holds it back."""
    arrivals = list(WORKLOAD.arrivals())
    made: list[tuple[float, object]] = []
    offered, created, t = 0, 0, 0.0
    while t < WORKLOAD.duration_seconds:
        t = min(t + 2.0, WORKLOAD.duration_seconds)
        for p in islice(WORKLOAD.due(offered, created, t), MAX_PRODUCTS_PER_TICK):
            made.append((t, p))
            offered += p.size_bytes
            created += 1
    assert [p for _, p in made] == [p for _, p in arrivals]
    for (tick, _), (arrival, _) in zip(made, arrivals, strict=True):
        assert arrival <= tick < arrival + 2.0 + 1e-9


def test_percentiles_are_nearest_rank():
    assert percentile([], 0.5) is None
    assert percentile([3.0, 1.0, 2.0, 4.0], 0.5) == 2.0
    assert percentile([float(x) for x in range(1, 11)], 0.9) == 9.0
    assert percentile([5.0], 0.9) == 5.0
    assert math.isclose(percentile([1.0, 2.0], 1.0) or 0, 2.0)
