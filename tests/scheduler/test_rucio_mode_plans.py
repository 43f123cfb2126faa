"""Plans in Rucio mode make no relay legs (``PlanConfig.relays`` off): Rucio's conveyor chooses every copy's
path, so a relay the plan made could not be carried as planned (docs/rucio.md, "What of the plan reaches
Rucio's copies"). The RELAY degrade step is not taken, and says so; a distribution policy, which relays by
definition, is refused naming the field; the push loop's settings turn relays off in Rucio mode."""

from __future__ import annotations

from dataclasses import replace

import pytest

from schedulers.planning import (
    DegradeStep,
    LegRole,
    PlanConfig,
    PlanInputError,
    PolicyKind,
    Product,
    ReplicaPolicy,
    plan,
)
from schedulers.planning.lanes import lane_demands

from .helpers import star

NO_RELAYS = replace(PlanConfig(), relays=False)


def test_backpressure_in_rucio_mode_defers_second_copies_but_makes_no_relay_leg_and_says_so() -> None:
    """The case that relays with relays on (test_planner_rules.py): the same products and policy."""
    topo = star(buffer_bytes=1e12)
    products = [Product(f"p{i:03d}", "T1", 50e9, 0.0) for i in range(60)]
    policy = ReplicaPolicy(PolicyKind.TWO_REPLICAS, relays={"T1": "Z", "T2": "Z"})
    assert any(leg.role == LegRole.RELAY for leg in plan(products, topo, policy).legs)

    result = plan(products, topo, policy, config=NO_RELAYS)
    assert result.legs and not [leg for leg in result.legs if leg.role in (LegRole.RELAY, LegRole.FORWARD)]
    assert not [lane for lane in result.lanes if "Z" in (lane.source, lane.destination)]
    details = [e.detail for e in result.events if e.kind == "degrade"]
    assert any(DegradeStep.DEFER_SECOND_COPIES.value in d for d in details)
    (relay,) = [d for d in details if DegradeStep.RELAY.value in d]
    assert "not taken" in relay and "Rucio mode" in relay, relay
    # every product still gets its first copy, straight from the telescope
    firsts = {leg.product_id for leg in result.legs if leg.role == LegRole.PRIMARY and leg.source == "T1"}
    assert firsts == {p.id for p in products}


def test_the_lanes_of_a_plan_without_relays_have_no_relay_lane() -> None:
    topo = star()
    policy = ReplicaPolicy(PolicyKind.ONE_REPLICA, relays={"T1": "Z"})
    assert ("T1", "Z") in lane_demands(policy, topo, PlanConfig())
    assert not [key for key in lane_demands(policy, topo, NO_RELAYS) if "Z" in key]


def test_a_distribution_policy_is_refused_when_the_plan_may_not_relay() -> None:
    topo = star()
    policy = ReplicaPolicy(PolicyKind.DISTRIBUTION, relays={"T1": "Z", "T2": "Z"}, relay_all=True)
    assert any(leg.role == LegRole.RELAY for leg in plan([Product("p1", "T1", 1e9)], topo, policy).legs)
    with pytest.raises(PlanInputError, match=r"^relays: a distribution policy .*\(Rucio mode"):
        plan([Product("p1", "T1", 1e9)], topo, policy, config=NO_RELAYS)


@pytest.mark.parametrize(("mode", "relays"), [("rucio", False), ("transfertool", True), ("RUCIO", False)])
def test_the_deployments_plans_make_relays_except_in_rucio_mode(settings, mode: str, relays: bool) -> None:  # type: ignore[no-untyped-def]
    from schedulers.plan_settings import plan_config

    settings.SRCNET_PUSH_THROUGH = mode
    assert plan_config().relays is relays


# The push loop in Rucio mode, with the rule placement recorded (tests/rucio runs it against a real Rucio).


@pytest.fixture
def rucio_rules(settings, monkeypatch):  # type: ignore[no-untyped-def]
    """Rucio mode, each rule the loop would place recorded (destination RSE) instead of sent to Rucio."""
    import uuid

    placed: list[str] = []

    def place_by_rule(product, destination, replica, *, activity):  # type: ignore[no-untyped-def]
        placed.append(destination.name)
        return uuid.uuid4().hex

    settings.SRCNET_PUSH_THROUGH = "rucio"
    monkeypatch.setattr("schedulers.leg_submission.place_by_rule", place_by_rule)
    return placed


@pytest.mark.django_db
def test_in_rucio_mode_a_distribution_policy_stops_its_telescope_naming_relays(
    reference_topology, rucio_rules
) -> None:  # type: ignore[no-untyped-def]
    from schedulers.loop import push_cycle

    from .test_policy_execution import RecordingTool, _only_uk, _product, _stored

    _only_uk()
    _stored(kind="distribution", relay_centre="SingaporeDC", relay_all=True)
    product = _product()
    cycle = push_cycle(transfertool=RecordingTool())
    assert "SKA1-Low: relays: a distribution policy" in cycle.error, cycle.error
    assert cycle.legs_submitted == 0 and rucio_rules == []
    assert not product.replicas.exclude(endpoint__role="sdp").exists()


@pytest.mark.django_db
def test_in_rucio_mode_a_relayed_leg_is_refused_never_dropped(reference_topology, rucio_rules) -> None:  # type: ignore[no-untyped-def]
    """A plan made with relays on (not the push loop's in Rucio mode) handed to Rucio mode: the relay leg is
    a TransfertoolError naming the relay, and nothing is placed (no rule at the final destination)."""
    from schedulers.leg_submission import submit_first
    from schedulers.planning.types import Leg
    from transfertools.interface import TransfertoolError

    from .test_policy_execution import RecordingTool, _only_uk, _product

    _only_uk()
    product = _product()
    common = {"product_id": product.did, "links": (), "streams": 2, "files": 2, "start_s": 0.0}
    timing = {"start_slot": 0, "finish_s": 10.0, "rate_bps": 1e9, "priority": 3}
    relay = Leg(role=LegRole.RELAY, source="SKA1-Low", destination="SingaporeDC", **common, **timing)  # type: ignore[arg-type]
    forward = Leg(role=LegRole.FORWARD, source="SingaporeDC", destination="UKSRC", **common, **timing)  # type: ignore[arg-type]
    from replicas.models import ReplicaPolicy as StoredPolicy

    with pytest.raises(
        TransfertoolError, match=r"^relay: Rucio mode cannot carry the plan's relay .* via SingaporeDC"
    ):
        submit_first(relay, forward, None, StoredPolicy(), RecordingTool())
    assert rucio_rules == [] and not product.replicas.exclude(endpoint__role="sdp").exists()


@pytest.mark.django_db
def test_in_rucio_mode_the_plans_streams_per_copy_become_the_lanes_link_streams(
    reference_topology, rucio_rules
) -> None:  # type: ignore[no-untyped-def]
    """The conveyor's jobs carry no nostreams: the leg's streams per copy go on the lane's link, beside its
    copies at once; the leg handed on last sets them (the link holds one value)."""
    from replicas.models import ReplicaPolicy as StoredPolicy
    from schedulers.leg_submission import submit_first
    from schedulers.planning.types import Leg

    from .test_policy_execution import RecordingTool, _only_uk, _product

    _only_uk()
    tool = RecordingTool()
    streams_set = []
    for name, streams in (("obs-a", 8), ("obs-b", 2)):
        product = _product(name)
        leg = Leg(
            product_id=product.did,
            role=LegRole.PRIMARY,
            source="SKA1-Low",
            destination="UKSRC",
            links=(),
            streams=streams,
            files=2,
            start_s=0.0,
            start_slot=0,
            finish_s=10.0,
            rate_bps=1e9,
            priority=3,
            lane_files=2,
        )
        entry = submit_first(leg, None, None, StoredPolicy(), tool)
        assert entry is not None
        (link,) = tool.links.values()
        assert (link.min_active, link.max_active, link.optimizer_mode) == (2, 2, 0)
        assert link.nostreams == entry["streams"] // entry["files"]
        streams_set.append(link.nostreams)
    assert streams_set == [4, 1] and rucio_rules == ["UKSRC_DISK", "UKSRC_DISK"]


@pytest.mark.parametrize("streams", [0, -1, 65, True])
def test_a_streams_value_a_link_cannot_hold_is_refused_naming_streams(streams: int) -> None:
    from schedulers.leg_submission import rucio_link_streams
    from schedulers.planning.dispatch import JobHints
    from transfertools.interface import TransfertoolError

    hints = JobHints(
        priority=3, streams=4, concurrent_files=1, max_rate_bps=1e9, activity="x", streams_per_file=streams
    )
    with pytest.raises(
        TransfertoolError,
        match=r"^streams: the plan's .* streams per copy cannot be a link's nostreams \(1 to 64\)",
    ):
        rucio_link_streams(hints)
