"""Planning pinned products (pure): the pinned SRCs share a telescope's access link, one copy each; with
each telescope's own pins, its lanes go to those only, and a product pinned elsewhere is refused."""

from __future__ import annotations

import pytest

from schedulers.planning.lanes import build_lanes, normalised_shares
from schedulers.planning.pinning import pinned_policy, pinned_topology
from schedulers.planning.planner import plan
from schedulers.planning.policies import PolicyKind, ReplicaPolicy
from schedulers.planning.types import LiveState, PlanConfig, PlanInputError, Product
from schedulers.simulation.reference import reference_topology

TOPOLOGY = reference_topology()


def _lanes_from(topology, telescope):  # type: ignore[no-untyped-def]
    lanes = build_lanes(ReplicaPolicy(), topology, LiveState(), PlanConfig())
    return {k[1]: lane.rate_bps for k, lane in lanes.items() if k[0] == telescope and lane.rate_bps > 0}


def test_the_pinned_srcs_share_the_access_link_equally():
    pinned = pinned_topology(TOPOLOGY, ["UKSRC", "FRSRC", "CASRC"])
    assert normalised_shares(pinned) == pytest.approx({"UKSRC": 1 / 3, "FRSRC": 1 / 3, "CASRC": 1 / 3})
    # Without a telescope's own pins, both telescopes' lanes go to every pin (the push loop, one telescope
    # per plan).
    assert (
        set(_lanes_from(pinned, "SKA1-Low"))
        == set(_lanes_from(pinned, "SKA1-Mid"))
        == {
            "UKSRC",
            "FRSRC",
            "CASRC",
        }
    )


def test_each_telescope_sends_only_to_its_own_pins():
    pinned = pinned_topology(
        TOPOLOGY, ["UKSRC", "AUSRC", "FRSRC"], {"SKA1-Low": ["AUSRC", "FRSRC"], "SKA1-Mid": ["UKSRC"]}
    )
    low, mid = _lanes_from(pinned, "SKA1-Low"), _lanes_from(pinned, "SKA1-Mid")
    assert set(low) == {"AUSRC", "FRSRC"} and set(mid) == {"UKSRC"}
    # The access link's target goes to the telescope's own lanes, up to each SRC's 20 Gbit/s budget.
    assert mid["UKSRC"] == pytest.approx(20e9) and low["AUSRC"] == pytest.approx(20e9)
    products = [
        Product("a", "SKA1-Low", 5e10, destination="AUSRC"),
        Product("b", "SKA1-Mid", 5e10, destination="UKSRC"),
    ]
    result = plan(products, pinned, ReplicaPolicy(), LiveState(), PlanConfig())
    assert result.replicas == {"a": ("AUSRC",), "b": ("UKSRC",)}
    with pytest.raises(PlanInputError, match="destination of product c: 'UKSRC' is not one of SKA1-Low's"):
        plan([Product("c", "SKA1-Low", 5e10, destination="UKSRC")], pinned, ReplicaPolicy())
    wrong = pinned_topology(TOPOLOGY, ["UKSRC"], {"SKA1-Low": ["ZASRC"]})
    with pytest.raises(PlanInputError, match="share_sites of telescope SKA1-Low: 'ZASRC'"):
        plan([], wrong, ReplicaPolicy())


def test_pinned_products_ask_for_one_copy():
    assert pinned_policy(ReplicaPolicy(PolicyKind.TWO_REPLICAS)).kind == PolicyKind.ONE_REPLICA
    assert (
        pinned_policy(ReplicaPolicy(PolicyKind.FULL_COPY, copy_site="UKSRC")).kind == PolicyKind.ONE_REPLICA
    )
    relayed = ReplicaPolicy(PolicyKind.DISTRIBUTION, relays={"SKA1-Low": "SingaporeDC"})
    assert pinned_policy(relayed) == relayed
