"""A rule on a product still at its SDP pins the product's first copy; the telescope's two-replicas policy
still gets its second copy, from that first copy, as it would have from its own."""

from __future__ import annotations

import pytest

from replicas.choices import PolicyKind, ProductState, ReplicaState
from replicas.models import DataProduct, ReplicaPolicy
from rules.services import create_rule, remove_rule
from schedulers.loop import push_cycle
from tests.factories import product_at_sdp
from topology.models import Telescope

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_replicas(reference_topology) -> ReplicaPolicy:  # type: ignore[no-untyped-def]
    low = Telescope.objects.get(name="SKA1-Low")
    ReplicaPolicy.objects.filter(telescope=low).update(is_active=False)
    return ReplicaPolicy.objects.create(
        name="low-two", telescope=low, kind=PolicyKind.TWO_REPLICAS, partners={"AUSRC": "UKSRC"}
    )


def _product(name: str) -> DataProduct:
    return product_at_sdp(name, sizes=[10**9])


def _copies(product: DataProduct) -> dict[str, tuple[str, str | None, str | None]]:
    """Endpoint -> (state, upstream endpoint, policy) of the product's copies at SRCs."""
    return {
        r.endpoint.name: (
            r.state,
            r.upstream.endpoint.name if r.upstream else None,
            r.policy.name if r.policy else None,
        )
        for r in product.replicas.exclude(endpoint__role="sdp").select_related("upstream__endpoint", "policy")
    }


def test_the_policys_second_copy_follows_a_first_copy_a_rule_pinned(two_replicas, scientist) -> None:  # type: ignore[no-untyped-def]
    product = _product("pinned-two")
    rule = create_rule(owner=scientist, product=product.did, srcs=["AUSRC"], copies=1)
    assert _copies(product) == {
        "AUSRC_DISK": ("planned", None, None),
        "UKSRC_DISK": ("planned", "AUSRC_DISK", "low-two"),
    }
    # The policy's copy is not the rule's: the rule stands for its own copy only.
    assert [r.endpoint.name for r in rule.replicas.all()] == ["AUSRC_DISK"]
    uk = product.replicas.get(endpoint__name="UKSRC_DISK")
    assert (
        "low-two (two_replicas): second copy (redistribution to the partner SRC), AUSRC -> UKSRC" in uk.reason
    )
    # The push loop carries the pinned first copy; the second waits for it, as a policy's second copy does.
    cycle = push_cycle()
    assert cycle.error == "" and [e["product"] for e in cycle.submitted] == [product.did]
    product.refresh_from_db()
    assert product.state == ProductState.PLACING
    assert _copies(product) == {
        "AUSRC_DISK": ("copying", None, None),
        "UKSRC_DISK": ("planned", "AUSRC_DISK", "low-two"),
    }


def test_no_second_copy_where_the_rule_already_makes_one_and_none_left_when_it_is_removed(  # type: ignore[no-untyped-def]
    two_replicas, scientist
) -> None:
    both = _product("pinned-both")
    create_rule(owner=scientist, product=both.did, srcs=["AUSRC", "UKSRC"], copies=2)
    assert _copies(both) == {
        "AUSRC_DISK": ("planned", None, None),
        "UKSRC_DISK": ("planned", "AUSRC_DISK", None),
    }
    # Removed before it started: the pinned copy and the policy's copy after it go; the product is queued
    # again for its policy to place both.
    gone = _product("pinned-gone")
    rule = create_rule(owner=scientist, product=gone.did, srcs=["AUSRC"], copies=1)
    assert set(_copies(gone)) == {"AUSRC_DISK", "UKSRC_DISK"}
    remove_rule(rule=rule)
    gone.refresh_from_db()
    assert _copies(gone) == {} and gone.state == ProductState.REGISTERED
    assert ReplicaState.PLANNED not in {r.state for r in gone.replicas.all()}


def test_a_one_replica_policy_gets_no_extra_copy(reference_topology, scientist) -> None:  # type: ignore[no-untyped-def]
    product = _product("pinned-one")
    create_rule(owner=scientist, product=product.did, srcs=["AUSRC"], copies=1)
    assert _copies(product) == {"AUSRC_DISK": ("planned", None, None)}
