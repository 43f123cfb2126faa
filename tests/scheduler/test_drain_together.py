"""A telescope's lanes share its access link by the work each has in sight (planning.backlog), so that a
lane that falls behind gets more of the link and more copies in flight, and the lanes drain together."""

from __future__ import annotations

from dataclasses import replace

import pytest

from schedulers.planning import PlanConfig, Product, ReplicaPolicy, plan
from schedulers.planning.backlog import lane_work
from schedulers.planning.lanes import build_lanes
from schedulers.planning.pinning import pinned_policy, pinned_topology
from schedulers.planning.types import (
    LinkSpec,
    LiveState,
    Measurement,
    PathSpec,
    SiteSpec,
    TelescopeSpec,
    Topology,
)
from schedulers.simulation.engine import SimConfig, simulate

from .helpers import star

MB = 1e6
CONFIG = PlanConfig(drain_together=True)  # off by default (docs/benchmarks.md): these tests turn it on


def two_srcs() -> Topology:
    """T1 with a 100 Mbit/s access link and two SRCs of equal share, as a campaign pins them; both pull
    by HTTP-TPC (one stream per 16 MiB block)."""
    topology = star(telescopes=("T1",), srcs={"A": 1.0, "B": 1.0}, centre=None, capacity={"x-T1": 100e6})
    sites = tuple(replace(s, tpc_block_bytes=16 * 2**20) for s in topology.sites)
    return pinned_topology(replace(topology, sites=sites), ["A", "B"])


def _rates(work: dict[tuple[str, str], float] | None, config: PlanConfig = CONFIG) -> dict[str, float]:
    lanes = build_lanes(ReplicaPolicy(), two_srcs(), LiveState(), config, work=work)
    return {dest: lane.rate_bps for (source, dest), lane in lanes.items() if source == "T1"}


def test_a_lanes_work_is_its_bytes_in_flight_its_queue_and_its_share_of_the_unplaced() -> None:
    topology = star(telescopes=("T1",), srcs={"A": 3.0, "B": 1.0}, centre=None)
    state = LiveState(lane_backlog_bytes={("T1", "A"): 100 * MB, ("A", "B"): 7 * MB})
    products = [
        Product("pinned", "T1", 50 * MB, destination="B"),
        Product("free", "T1", 200 * MB),  # A takes 3/4 of it by its share, B 1/4
    ]
    work = lane_work(products, ReplicaPolicy(), topology, state)
    assert work == pytest.approx({("T1", "A"): 250 * MB, ("T1", "B"): 100 * MB, ("A", "B"): 7 * MB})


def test_the_lane_with_more_work_gets_more_of_the_link_and_both_drain_in_the_same_time() -> None:
    rates = _rates({("T1", "A"): 600 * MB, ("T1", "B"): 200 * MB})
    # The whole target still goes out, split by work in sight: both lanes drain in the same time.
    assert rates["A"] + rates["B"] == pytest.approx(0.97 * 100e6)
    assert rates["A"] / rates["B"] == pytest.approx(3.0)
    assert 600 * MB * 8 / rates["A"] == pytest.approx(200 * MB * 8 / rates["B"])
    # A lane with nothing in sight holds no part of the link while another has work.
    assert _rates({("T1", "A"): 600 * MB}) == pytest.approx({"A": 97e6, "B": 0.0})
    # Equal work, nothing in sight at all, or the option off: the policy's shares.
    assert _rates({("T1", "A"): 80 * MB, ("T1", "B"): 80 * MB}) == pytest.approx({"A": 48.5e6, "B": 48.5e6})
    assert _rates({}) == pytest.approx({"A": 48.5e6, "B": 48.5e6})
    off = replace(CONFIG, drain_together=False)
    assert _rates({("T1", "A"): 600 * MB}, off) == pytest.approx({"A": 48.5e6, "B": 48.5e6})


def test_a_telescope_with_nothing_in_sight_leaves_a_shared_src_to_the_one_with_work() -> None:
    """Two telescopes' lanes into one SRC share its peak. The one with nothing to send used to hold half of
    it at its share, which halved the other's lane (the push loop plans one telescope at a time, with the
    other's lanes in the topology); now it gets only what the one with work leaves."""
    topology = star(
        telescopes=("T1", "T2"),
        srcs={"A": 1.0},
        centre=None,
        peak_bps=100e6,
        budget_bps=100e6,
        capacity={"x-T1": 100e6, "x-T2": 100e6},
    )
    for config in (CONFIG, replace(CONFIG, drain_together=False)):  # whether or not lanes drain together
        lanes = build_lanes(ReplicaPolicy(), topology, LiveState(), config, work={("T1", "A"): 64 * MB})
        assert lanes[("T1", "A")].rate_bps == pytest.approx(97e6)
        assert lanes[("T2", "A")].rate_bps == pytest.approx(3e6)
    # Work for both: they share the peak by their targets, as before (work splits a telescope's own target).
    both = build_lanes(
        ReplicaPolicy(), topology, LiveState(), CONFIG, work={("T1", "A"): 96 * MB, ("T2", "A"): 32 * MB}
    )
    assert both[("T1", "A")].rate_bps == pytest.approx(50e6)
    assert both[("T2", "A")].rate_bps == pytest.approx(50e6)


def test_a_lane_never_gets_more_than_its_path_carries() -> None:
    topology = star(
        telescopes=("T1",), srcs={"A": 1.0, "B": 1.0}, centre=None, capacity={"x-T1": 100e6, "x-A": 30e6}
    )
    work = {("T1", "A"): 10_000 * MB, ("T1", "B"): 100 * MB}
    lanes = build_lanes(ReplicaPolicy(), topology, LiveState(), CONFIG, work=work)
    # A's path carries 30 Mbit/s however far behind it is; B has the rest of the target.
    assert lanes[("T1", "A")].rate_bps == pytest.approx(30e6)
    assert lanes[("T1", "B")].rate_bps == pytest.approx(0.97 * 100e6 - 30e6)


def test_the_plan_gives_the_lane_behind_more_copies_in_flight() -> None:
    topology = two_srcs()
    products = [Product(f"a{i}", "T1", 64 * MB, files=2, destination="A") for i in range(6)]
    products.append(Product("b0", "T1", 64 * MB, files=2, destination="B"))
    # Each copy has carried 12 Mbit/s on either lane: a lane's copies follow its planned rate.
    measured = tuple(Measurement("T1", dest, 1, 12e6) for dest in "AB" for _ in range(5))
    state = LiveState(lane_backlog_bytes={("T1", "A"): 600 * MB}, measurements=measured)
    policy = pinned_policy(ReplicaPolicy())

    def copies(config: PlanConfig) -> dict[str, int]:
        legs = plan(products, topology, policy, state, config).legs
        return {dest: max(leg.lane_copies for leg in legs if leg.destination == dest) for dest in "AB"}

    together, by_shares = copies(CONFIG), copies(replace(CONFIG, drain_together=False))
    assert together["A"] > by_shares["A"]
    assert together["A"] > together["B"]
    assert by_shares["A"] == by_shares["B"]


def near_and_far() -> Topology:
    """The long-haul local network's two lanes (bench_reality): a 100 Mbit/s access link, AUSRC 7.5 ms
    and UKSRC 223 ms away, with equal shares."""
    links = (
        LinkSpec("access", 100e6, 4.0, 0.0, 0.0, "T", "X"),
        LinkSpec("near", 10e9, 3.5, 0.0, 0.0, "X", "NEAR"),
        LinkSpec("far", 10e9, 219.0, 0.0, 0.0, "X", "FAR"),
    )
    sites = (SiteSpec("NEAR", 1.0, 10e9, 10e9), SiteSpec("FAR", 1.0, 10e9, 10e9))
    paths = (PathSpec("T", "NEAR", ("access", "near")), PathSpec("T", "FAR", ("access", "far")))
    return Topology((TelescopeSpec("T", "access", 1e12, 1e15),), sites, links, paths, 16 * 2**20)


def test_in_the_simulator_the_far_lane_no_longer_finishes_alone() -> None:
    """The far lane's copies lose more to their start (handshakes and slow start at 223 ms): split by
    shares it ends the push alone; split by work in sight it catches up, and the push ends sooner."""
    topology = pinned_topology(near_and_far(), ["NEAR", "FAR"])
    products = [
        Product(f"p{i}", "T", 64 * MB, float(5 * i), files=2, destination=("FAR", "NEAR")[i % 2])
        for i in range(24)
    ]

    def last_delivery(drain: bool) -> dict[str, float]:
        config = SimConfig(
            duration_s=400,
            replan_s=2.0,
            plan=replace(CONFIG, drain_together=drain),
            copies_in_flight=True,
            leg_setup_rtts=4.0,
            initial_window_bytes=14480.0,
        )
        result = simulate(topology, pinned_policy(ReplicaPolicy()), products, config)
        done = [r.delivered_s for r in result.records.values()]
        assert all(done), "every product is delivered"
        return {site: max(d[site] for d in done if site in d) for site in ("NEAR", "FAR")}

    together, by_shares = last_delivery(True), last_delivery(False)
    assert together["FAR"] < by_shares["FAR"]
    # The lanes end closer together: the far lane is no longer alone on the link for long.
    assert together["FAR"] - together["NEAR"] < by_shares["FAR"] - by_shares["NEAR"]


def test_the_push_loops_plan_gives_the_lane_with_more_in_flight_more_of_the_link(reference_topology) -> None:  # type: ignore[no-untyped-def]
    """The loop (and the API's plan preview, which plans through the same ``cycle_plans``) hands the
    planner what is still to copy on each lane (``arrivals.lane_backlog_bytes``)."""
    import datetime as dt

    from replicas.models import DataProduct, Replica
    from replicas.services import FileSpec, register_product
    from schedulers.telescope_plans import cycle_plans
    from tests.conftest import policy_of_shares
    from topology.models import RegionalCentre, StorageEndpoint, Telescope

    policy_of_shares({"UKSRC_DISK": 1, "AUSRC_DISK": 1})
    # Budgets that let either SRC fill SKA1-Low's link, as the several SRCs a full link feeds would.
    RegionalCentre.objects.filter(name__in=("UKSRC", "AUSRC")).update(
        budget_per_telescope_bps=int(100e9), peak_bps=int(100e9)
    )
    low = Telescope.objects.get(name="SKA1-Low")

    def product(name: str) -> DataProduct:
        files = [FileSpec(f"{name}.ms", 10**12, "0cc737eb")]
        return register_product(scope="ska", name=name, telescope=low, priority=3, files=files)

    uk = StorageEndpoint.objects.get(name="UKSRC_DISK")
    for name in ("sent-1", "sent-2", "sent-3"):  # three 1 TB copies in flight to UKSRC, none to AUSRC
        sent = product(name)
        Replica.objects.create(product=sent, endpoint=uk, state="copying")
        DataProduct.objects.filter(pk=sent.pk).update(state="placing")
    product("queued")  # half a TB each way by the shares

    def rates(config: PlanConfig) -> dict[str, float]:
        errors: list[str] = []
        plans = list(cycle_plans(now=dt.datetime.now(dt.UTC), config=config, errors=errors))
        assert errors == []
        lanes = [lane for planned, _ in plans for lane in planned.result.lanes]
        return {lane.destination: lane.rate_bps for lane in lanes if lane.source == "SKA1-Low"}

    together, by_shares = rates(CONFIG), rates(replace(CONFIG, drain_together=False))
    # 3.5 TB in sight for UKSRC against 0.5 TB for AUSRC: UKSRC gets what its 16 streams over 223 ms
    # carry (more than half), AUSRC less than half, and the link's target is used as before.
    assert together["UKSRC"] > 1.2 * by_shares["UKSRC"] and together["AUSRC"] < by_shares["AUSRC"]
    assert by_shares["UKSRC"] == pytest.approx(by_shares["AUSRC"])
    assert sum(together.values()) == pytest.approx(sum(by_shares.values()))


def test_a_relaying_telescope_still_sends_part_of_its_work_through_its_centre() -> None:
    """Under backpressure's RELAY step half a telescope's work goes through its distribution centre: the
    relay lane has that much work in sight, and the plan relays as it does with the shares alone."""
    from schedulers.planning.policies import DegradeStep, PolicyKind

    topology = star(telescopes=("T1",), srcs={"A": 1.0, "B": 1.0}, buffer_bytes=1e12)
    product = [Product("p", "T1", 100 * MB)]
    work = lane_work(product, ReplicaPolicy(), topology, LiveState(), {"T1": ("Z", 0.5)})
    assert work == pytest.approx({("T1", "A"): 25 * MB, ("T1", "B"): 25 * MB, ("T1", "Z"): 50 * MB})

    policy = ReplicaPolicy(PolicyKind.TWO_REPLICAS, relays={"T1": "Z"})
    state = LiveState(degraded_level={"T1": policy.degrade_order.index(DegradeStep.RELAY) + 1})
    products = [Product(f"p{i:02d}", "T1", 50e9) for i in range(60)]

    def relayed(config: PlanConfig) -> tuple[float, int]:
        result = plan(products, topology, policy, state, config)
        rate = next(lane.rate_bps for lane in result.lanes if lane.key == ("T1", "Z"))
        return rate, sum(1 for leg in result.legs if leg.role.value == "relay")

    together, by_shares = relayed(CONFIG), relayed(replace(CONFIG, drain_together=False))
    assert together[0] > 0 and together[1] > 0
    assert together == pytest.approx(by_shares)


def test_the_loops_pinned_plan_is_not_halved_by_an_idle_telescopes_lane(reference_topology) -> None:  # type: ignore[no-untyped-def]
    """A campaign's product pinned to UKSRC, nothing queued for SKA1-Mid: the loop plans SKA1-Low alone,
    with SKA1-Mid's lane to UKSRC in the topology; that lane no longer holds half of UKSRC's peak."""
    import datetime as dt

    from replicas.models import Replica
    from replicas.services import FileSpec, register_product
    from schedulers.telescope_plans import cycle_plans
    from topology.models import RegionalCentre, StorageEndpoint, Telescope

    RegionalCentre.objects.filter(name="UKSRC").update(
        budget_per_telescope_bps=int(100e9), peak_bps=int(100e9)
    )
    files = [FileSpec("pinned.ms", 10**12, "0cc737eb")]
    product = register_product(
        scope="ska", name="pinned", telescope=Telescope.objects.get(name="SKA1-Low"), files=files
    )
    uk = StorageEndpoint.objects.get(name="UKSRC_DISK")
    Replica.objects.create(product=product, endpoint=uk, state="planned")  # the campaign's pin

    def uk_rate(config: PlanConfig) -> float:
        errors: list[str] = []
        plans = list(cycle_plans(now=dt.datetime.now(dt.UTC), config=config, errors=errors))
        assert errors == []
        (rate,) = [
            lane.rate_bps
            for planned, _ in plans
            for lane in planned.result.lanes
            if lane.key == ("SKA1-Low", "UKSRC")
        ]
        return rate

    assert uk_rate(CONFIG) == pytest.approx(97e9)
    # Whether or not the lanes drain together: an idle telescope never holds capacity.
    assert uk_rate(replace(CONFIG, drain_together=False)) == pytest.approx(97e9)
