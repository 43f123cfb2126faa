"""When a lane breaks (scheduler.md): unavailable lanes get no products, a first copy that failed on its way
sends its product back to the queue for another lane, a source problem still fails the product, the lane
comes back after its cool-off, and a product is re-routed a bounded number of times. The planner's part is
pure; the loop's runs against the database with a recording transfertool (the long-haul test,
tests/faults/test_reroute.py, moves real bytes over a cut link)."""

from __future__ import annotations

import datetime as dt

import pytest

from replicas.choices import ProductState, ReplicaState
from replicas.models import DataProduct, Replica
from schedulers.lane_health import unavailable_lanes
from schedulers.loop import push_cycle
from schedulers.planning import DegradeStep, LiveState, PolicyKind, Product, ReplicaPolicy, plan
from schedulers.snapshot import topology_snapshot
from tests.factories import settle_copy
from topology.models import Link, RegionalCentre, StorageEndpoint

from .helpers import star
from .test_policy_execution import RecordingTool, _product

STALLED = (
    "TRANSFER stalled: no progress at the destination for 12 s (1048576 of 25165824 bytes there), cancelled"
)
UK_LANE = ("SKA1-Low", "UKSRC")


# The planner (pure).


def test_an_unavailable_lane_gets_no_product_and_gives_its_capacity_away() -> None:
    state = LiveState(unavailable_lanes=frozenset({("T1", "A")}))
    products = [Product(f"p{i}", "T1", 10e9, i * 1.0) for i in range(20)]
    result = plan(products, star(budget_bps=100e9, peak_bps=100e9), ReplicaPolicy(), state)
    assert all(result.replicas[p.id][0] != "A" for p in products)
    rates = {lane.key: lane.rate_bps for lane in result.lanes}
    assert rates[("T1", "A")] == 0
    assert sum(r for k, r in rates.items() if k[0] == "T1") == pytest.approx(97e9)


def test_a_relay_goes_round_a_broken_lane_only_if_its_legs_are_available() -> None:
    policy = ReplicaPolicy(PolicyKind.ONE_REPLICA, relays={"T1": "Z"}, degrade_order=(DegradeStep.RELAY,))
    # A small SDP buffer: the first product fills it past degrade_at, and the RELAY step turns on.
    topo = star(srcs={"A": 1.0, "B": 1.0}, buffer_bytes=12e9)
    products = [Product(f"p{i}", "T1", 10e9, i * 1.0) for i in range(6)]
    around = plan(products, topo, policy, LiveState(unavailable_lanes=frozenset({("T1", "A")})))
    to_a = [leg for leg in around.legs if leg.destination == "A"]
    assert to_a and all(leg.source == "Z" for leg in to_a)  # through the centre, whose legs are fine
    both = frozenset({("T1", "A"), ("Z", "A")})
    blocked = plan(products, topo, policy, LiveState(unavailable_lanes=both))
    assert all(blocked.replicas[p.id][0] == "B" for p in products)


# The loop, against the database.

pytestmark = pytest.mark.django_db


def _uk_and_au() -> None:
    """SKA1-Low's first copies: UKSRC 3, AUSRC 1 (UKSRC first, as it is furthest below its share)."""
    RegionalCentre.objects.exclude(name__in=["UKSRC", "AUSRC"]).update(share_weight=0)
    RegionalCentre.objects.filter(name="UKSRC").update(share_weight=3)
    RegionalCentre.objects.filter(name="AUSRC").update(share_weight=1)


def _fail(replica: Replica, reason: str = STALLED) -> None:
    settle_copy(replica, "FAILED", [reason])


def _copying(product: DataProduct) -> Replica:
    return product.replicas.get(state=ReplicaState.COPYING)


def test_a_copy_failed_on_its_way_goes_to_another_src_and_the_cycle_says_why(  # type: ignore[no-untyped-def]
    reference_topology, scientist_client
) -> None:
    _uk_and_au()
    product, tool = _product(), RecordingTool()
    push_cycle(transfertool=tool)
    first = _copying(product)
    assert first.endpoint.name == "UKSRC_DISK"
    _fail(first)
    product.refresh_from_db()
    first.refresh_from_db()
    assert product.state == ProductState.REGISTERED  # back in the SDP queue, not failed
    assert first.state == ReplicaState.FAILED and STALLED in first.reason
    assert "[re-routed] back to the SDP queue (1 of 3)" in first.reason
    assert set(unavailable_lanes(topology=topology_snapshot())) == {UK_LANE}
    cycle = push_cycle(transfertool=tool)
    assert [s["lane"] for s in cycle.submitted] == [["SKA1-Low", "AUSRC"]]
    (event,) = [e for e in cycle.events if e["kind"] == "reroute"]
    assert event["detail"].startswith("lane SKA1-Low -> UKSRC unavailable since ")
    assert STALLED in event["detail"] and event["detail"].endswith(": re-routing")
    again = _copying(product)
    settle_copy(again, "FINISHED")
    product.refresh_from_db()
    assert product.state == ProductState.PLACED  # the failed copy is history, not the product's state
    # The cycles API says it too.
    listed = scientist_client.get("/api/schedulers/cycles/").json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    (row,) = [r for r in rows if r["id"] == cycle.pk]
    assert event in row["events"] and row["submitted"][0]["lane"] == ["SKA1-Low", "AUSRC"]


def test_a_source_problem_still_fails_the_product_and_says_nothing_of_the_lane(reference_topology) -> None:  # type: ignore[no-untyped-def]
    _uk_and_au()
    product, tool = _product(), RecordingTool()
    push_cycle(transfertool=tool)
    # As the transfer service words it after its retries.
    _fail(_copying(product), "after 3 attempts: SOURCE [2 No such file or directory] gone")
    product.refresh_from_db()
    assert product.state == ProductState.FAILED
    assert unavailable_lanes(topology=topology_snapshot()) == {}


def test_the_lane_comes_back_after_its_cool_off_or_a_success(reference_topology, settings) -> None:  # type: ignore[no-untyped-def]
    _uk_and_au()
    tool = RecordingTool()
    product = _product("obs-a")
    push_cycle(transfertool=tool)
    _fail(_copying(product))
    topology = topology_snapshot()
    assert UK_LANE in unavailable_lanes(topology=topology)
    later = dt.datetime.now(dt.UTC) + dt.timedelta(
        seconds=settings.SRCNET_LANE_HEALTH["COOL_OFF_SECONDS"] + 1
    )
    assert unavailable_lanes(topology=topology, now=later) == {}  # the next product on it is the probe
    settings.SRCNET_LANE_HEALTH = {**settings.SRCNET_LANE_HEALTH, "COOL_OFF_SECONDS": 0}
    push_cycle(transfertool=tool)
    probe = _copying(product)
    assert probe.endpoint.name == "UKSRC_DISK"
    settle_copy(probe, "FINISHED")
    settings.SRCNET_LANE_HEALTH = {**settings.SRCNET_LANE_HEALTH, "COOL_OFF_SECONDS": 300}
    assert unavailable_lanes(topology=topology) == {}  # its last copy arrived


def test_a_product_is_re_routed_a_bounded_number_of_times(reference_topology, settings) -> None:  # type: ignore[no-untyped-def]
    _uk_and_au()
    settings.SRCNET_LANE_HEALTH = {**settings.SRCNET_LANE_HEALTH, "MAX_REROUTES": 1}
    product, tool = _product(), RecordingTool()
    push_cycle(transfertool=tool)
    _fail(_copying(product))
    push_cycle(transfertool=tool)
    _fail(_copying(product), "TRANSFER [110 Connection timed out] AU")
    product.refresh_from_db()
    assert product.state == ProductState.FAILED
    reasons = [r.reason for r in product.replicas.filter(state=ReplicaState.FAILED)]
    assert any(STALLED in r for r in reasons) and any("Connection timed out" in r for r in reasons)


def test_a_link_down_makes_its_lanes_unavailable(reference_topology) -> None:  # type: ignore[no-untyped-def]
    Link.objects.filter(name="singapore-london").update(is_up=False)
    outages = unavailable_lanes(topology=topology_snapshot())
    assert UK_LANE in outages and ("SKA1-Low", "AUSRC") not in outages
    assert outages[UK_LANE].reason == "link singapore-london down"


def test_a_pinned_product_whose_lane_broke_goes_by_its_telescopes_policy(reference_topology) -> None:  # type: ignore[no-untyped-def]
    _uk_and_au()
    tool = RecordingTool()
    broken = _product("obs-broken")
    push_cycle(transfertool=tool)
    _fail(_copying(broken))
    push_cycle(transfertool=tool)  # the broken lane's product goes to AUSRC
    pinned = _product("obs-pinned")
    pin = Replica.objects.create(
        product=pinned,
        endpoint=StorageEndpoint.objects.get(name="UKSRC_DISK"),
        state=ReplicaState.PLANNED,
        reason="campaign c1",
    )
    settle_copy(_copying(broken), "FINISHED")
    cycle = push_cycle(transfertool=tool)
    assert [s["lane"] for s in cycle.submitted] == [["SKA1-Low", "AUSRC"]]
    pin.refresh_from_db()
    assert pin.state == ReplicaState.FAILED
    assert (
        "lane SKA1-Low -> UKSRC unavailable, placed by the telescope's policy at AUSRC instead" in pin.reason
    )
    assert _copying(pinned).endpoint.name == "AUSRC_DISK"
