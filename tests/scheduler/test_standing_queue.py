"""The queue of a full link (flows.standing_queues, SimConfig.standing_queue): a copy that opens while a
link of its path is full meets its queueing delay in each setup and slow-start round trip. Measured on
the long-haul local network under BBR (docs/benchmarks.md, "The queue a full link holds")."""

from __future__ import annotations

import pytest

from schedulers.planning import PlanConfig, Product, ReplicaPolicy
from schedulers.planning.types import Leg, LegRole
from schedulers.simulation.engine import SimConfig, simulate
from schedulers.simulation.flows import Flow, standing_queues
from schedulers.simulation.measured import measured_stack
from topology.physics import SLOW_START_RTTS

from .helpers import star


def _flow(rtt_s: float, rate_bps: float, link: str = "l") -> Flow:
    leg = Leg("p", LegRole.PRIMARY, "T", "A", (link,), 1, 1, 0.0, 0, 0.0, 0.0, 3)
    flow = Flow(leg, ("T", "A"), (link,), 1e9, float("inf"), 1e12, rtt_s, None)
    flow.rate_bps = rate_bps
    return flow


def test_a_full_link_queues_its_flows_rate_weighted_round_trip_times_the_factor() -> None:
    flows = [_flow(0.223, 60e6), _flow(0.0075, 40e6)]
    queues = standing_queues(flows, {"l": 100e6}, 0.74)
    assert queues == {"l": pytest.approx(0.74 * (0.6 * 0.223 + 0.4 * 0.0075))}


def test_a_link_with_room_holds_no_queue() -> None:
    flows = [_flow(0.223, 60e6), _flow(0.0075, 30e6)]  # 90 % of the link
    assert standing_queues(flows, {"l": 100e6}, 0.74) == {}
    # A flow not sending (in its setup) neither fills a link nor counts in its round trips.
    assert standing_queues([_flow(0.223, 0.0), _flow(0.0075, 100e6)], {"l": 100e6}, 1.0) == {
        "l": pytest.approx(0.0075)
    }


def test_the_queue_is_no_longer_than_the_longest_path_across_the_link() -> None:
    # The buffer is taken to hold one bandwidth-delay product of the link's longest path, no more.
    queues = standing_queues([_flow(0.223, 50e6), _flow(0.0075, 50e6)], {"l": 100e6}, 5.0)
    assert queues == {"l": pytest.approx(0.223)}


def _delivered(products: list[Product], standing_queue: float) -> dict[str, float]:
    """Each product's delivery on T1's 10 Gbit/s access link, 100 ms to A and to B."""
    topo = star(
        telescopes=("T1",),
        srcs={"A": 1.0, "B": 1.0},
        centre=None,
        capacity={"x-T1": 10e9},
        rtt_ms=100.0,
        window_bytes=125e6,
    )
    config = SimConfig(
        duration_s=60,
        plan=PlanConfig(target_utilisation=1.0),
        paced=False,
        leg_setup_rtts=4.0,
        standing_queue=standing_queue,
    )
    records = simulate(topo, ReplicaPolicy(), products, config).records
    return {p.id: records[p.id].delivered_s[p.destination or ""] for p in products}


def _second_product_delivered(standing_queue: float, *, first: bool = True) -> float:
    """p1 (12.5 GB, to A) fills the link from t=0 for about 10 s; p2 (125 MB, to B) arrives at 2 s and
    opens its copy while the link is full (or, without ``first``, on an idle link)."""
    products = [
        *([Product("p1", "T1", 1.25e10, 0.0, destination="A")] if first else []),
        Product("p2", "T1", 1.25e8, 2.0, destination="B"),
    ]
    return _delivered(products, standing_queue)["p2"]


def test_a_copy_opened_on_a_full_link_meets_its_queue_in_every_setup_and_slow_start_round_trip() -> None:
    # p1 alone on the link: the queue is 0.5 * 100 ms. p2's 4 setup round trips, and each of its slow
    # start's below its share of the link, are 50 ms longer; it carries in each what it did, and shares
    # the link as before after them: p2 arrives a whole number of 50 ms later, more than the setup's 4.
    delay = _second_product_delivered(0.5) - _second_product_delivered(0.0)
    round_trips = delay / 0.05
    assert round_trips == pytest.approx(round(round_trips), abs=0.01)
    assert 4 < round(round_trips) <= 4 + SLOW_START_RTTS
    # Opened on an idle link, it meets no queue.
    assert _second_product_delivered(0.5, first=False) == pytest.approx(
        _second_product_delivered(0.0, first=False)
    )


def test_the_measured_stack_has_bbrs_standing_queue_and_the_defaults_none() -> None:
    assert SimConfig().standing_queue == 0.0  # the model as it was
    assert float(measured_stack("bbr")["standing_queue"]) > 0
    # Not measured under CUBIC: no queue (its lane fit stands for it, docs/scheduler.md).
    assert float(measured_stack("cubic").get("standing_queue", 0.0)) == 0.0


def _next_on_the_lane_delivered(standing_queue: float) -> tuple[float, float]:
    """p1 (12.5 GB) fills the link to A; p2 (125 MB, also to A) waits for the lane and opens its copy the
    moment p1's ends: (p1's delivery, p2's)."""
    products = [
        Product("p1", "T1", 1.25e10, 0.0, destination="A"),
        Product("p2", "T1", 1.25e8, 2.0, destination="A"),
    ]
    delivered = _delivered(products, standing_queue)
    return delivered["p1"], delivered["p2"]


def test_a_copy_opened_as_the_last_one_on_the_link_ends_meets_no_queue_of_it() -> None:
    # The ended copy's bytes leave the queue before the next copy's setup is over (the real runs: the 223 ms
    # lane's copies started at 13 ms of queue at the median where the link, with the ended copies on it,
    # had held 140-166 ms).
    first, second = _next_on_the_lane_delivered(0.5)
    assert second > first  # it waited for the lane
    assert (first, second) == pytest.approx(_next_on_the_lane_delivered(0.0))
