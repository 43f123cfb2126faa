"""The replica lifecycle (replicas/lifecycle.py), exhaustively: every move the state machine allows is made
and saved, every other raises and leaves the row as it was; rows start only in the states a copy can
start in; settling twice changes nothing; Rucio's view is mirrored whatever it is; a product follows its
replicas."""

from __future__ import annotations

import itertools

import pytest

from replicas import lifecycle
from replicas.choices import ProductState, ReplicaState
from replicas.lifecycle import IllegalTransition
from replicas.models import DataProduct, Replica
from replicas.rucio_record import record_rules
from replicas.rucio_types import RULE_COMMENT_PREFIX, RuleInfo
from replicas.services import FileSpec, register_product
from topology.models import StorageEndpoint, Telescope

pytestmark = pytest.mark.django_db

REPLICA_STATES = [s.value for s in ReplicaState]
PRODUCT_STATES = [s.value for s in ProductState]


@pytest.fixture
def product(reference_topology) -> DataProduct:  # type: ignore[no-untyped-def]
    return register_product(
        scope="ska",
        name="lifecycle",
        telescope=Telescope.objects.get(name="SKA1-Low"),
        files=[FileSpec("a.ms", 10, "00000001")],
    )


def a_replica(product: DataProduct, state: str, endpoint: str = "UKSRC_DISK") -> Replica:
    """A replica in ``state``: made in it where a row can start so, else made available and set (the
    set-up of a state a row reaches only by moves: lost, corrupt)."""
    start = state if state in lifecycle.REPLICA_STARTS or state == "deleted" else ReplicaState.AVAILABLE
    replica = lifecycle.new_replica(
        product=product, endpoint=StorageEndpoint.objects.get(name=endpoint), state=start, reason="r"
    )
    if start != state:
        Replica.objects.filter(pk=replica.pk).update(state=state)
        replica.refresh_from_db()
    return replica


@pytest.mark.parametrize(("old", "new"), list(itertools.product(REPLICA_STATES, REPLICA_STATES)))
def test_every_replica_move_is_allowed_or_refused_as_the_table_says(product, old: str, new: str) -> None:  # type: ignore[no-untyped-def]
    replica = a_replica(product, old)
    allowed = old == new or new in lifecycle.REPLICA_MOVES[old]
    if allowed:
        lifecycle.move(replica, new, reason="moved")
        replica.refresh_from_db()
        assert (replica.state, replica.reason) == (new, "moved")
    else:
        with pytest.raises(IllegalTransition, match=f"from {old} to {new}"):
            lifecycle.move(replica, new, reason="moved")
        replica.refresh_from_db()
        assert (replica.state, replica.reason) == (old, "r")


@pytest.mark.parametrize(("old", "new"), list(itertools.product(PRODUCT_STATES, PRODUCT_STATES)))
def test_every_product_move_is_allowed_or_refused_as_the_table_says(product, old: str, new: str) -> None:  # type: ignore[no-untyped-def]
    DataProduct.objects.filter(pk=product.pk).update(state=old)  # (the set-up: any state to start from)
    product.refresh_from_db()
    allowed = old == new or new in lifecycle.PRODUCT_MOVES[old]
    if allowed:
        lifecycle.move_product(product, new)
        product.refresh_from_db()
        assert product.state == new
    else:
        with pytest.raises(IllegalTransition, match=f"from {old} to {new}"):
            lifecycle.move_product(product, new)
        product.refresh_from_db()
        assert product.state == old


def test_a_copy_ends_available_or_failed_and_settling_it_again_changes_nothing(product) -> None:  # type: ignore[no-untyped-def]
    replica = a_replica(product, ReplicaState.COPYING)
    assert lifecycle.settle(replica, ReplicaState.AVAILABLE, "arrived") is True
    assert lifecycle.settle(replica, ReplicaState.AVAILABLE, "arrived") is False
    with pytest.raises(IllegalTransition, match="available or failed"):
        lifecycle.settle(replica, ReplicaState.PLANNED, "back")
    with pytest.raises(IllegalTransition, match="from available to failed"):
        lifecycle.settle(replica, ReplicaState.FAILED, "lost later")  # a check finds it LOST, not FAILED


def test_a_replica_found_lost_is_healed_from_another_available_one(product) -> None:  # type: ignore[no-untyped-def]
    replica = a_replica(product, ReplicaState.AVAILABLE)
    other = a_replica(product, ReplicaState.AVAILABLE, endpoint="AUSRC_DISK")
    with pytest.raises(IllegalTransition, match="lost or corrupt, not failed"):
        lifecycle.damage(replica, ReplicaState.FAILED, "x")
    assert lifecycle.damage(replica, ReplicaState.LOST, "gone") is True
    assert lifecycle.damage(replica, ReplicaState.LOST, "gone") is False  # found again the same: no change
    assert lifecycle.damage(replica, ReplicaState.CORRUPT, "rotted") is True  # a later check: worse news
    # Only from another available replica of its product.
    with pytest.raises(IllegalTransition, match="another available replica"):
        lifecycle.heal(replica, replica, "self")
    lifecycle.heal(replica, other, "healing")
    replica.refresh_from_db()
    assert (replica.state, replica.upstream_id, replica.repairs) == (ReplicaState.PLANNED, other.pk, 1)
    with pytest.raises(IllegalTransition, match="only a lost or corrupt replica is healed"):
        lifecycle.heal(replica, other, "again")
    with pytest.raises(IllegalTransition, match="only a lost or corrupt replica is given up"):
        lifecycle.give_up(replica, "x")


def test_a_damaged_replica_with_nothing_to_heal_it_is_given_up(product) -> None:  # type: ignore[no-untyped-def]
    replica = a_replica(product, ReplicaState.AVAILABLE)
    lifecycle.damage(replica, ReplicaState.LOST, "gone")
    lifecycle.give_up(replica, "no replica left")
    replica.refresh_from_db()
    assert replica.state == ReplicaState.FAILED


def test_a_product_is_placing_while_a_replica_heals_and_ignores_its_sdp_copys_damage(product) -> None:  # type: ignore[no-untyped-def]
    replica = a_replica(product, ReplicaState.AVAILABLE)
    lifecycle.follow_replicas(product, product.replicas.all())
    assert product.state == ProductState.PLACED
    sdp = product.replicas.get(endpoint=product.source)
    lifecycle.damage(sdp, ReplicaState.LOST, "the SDP cleaned up")
    lifecycle.follow_replicas(product, product.replicas.all())
    assert product.state == ProductState.PLACED  # its copies are where they were
    lifecycle.damage(replica, ReplicaState.CORRUPT, "rotted")
    lifecycle.follow_replicas(product, product.replicas.all())
    product.refresh_from_db()
    assert product.state == ProductState.PLACING


def test_rows_start_only_as_a_copy_can_start(product) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(IllegalTransition, match="cannot start"):
        a_replica(product, "deleted")
    assert not Replica.objects.filter(product=product, endpoint__name="UKSRC_DISK").exists()


def test_rucios_view_is_mirrored_whatever_the_move(product) -> None:  # type: ignore[no-untyped-def]
    """Rucio mode: Rucio is the authority (a repaired rule takes a FAILED lock back to replicating)."""
    replica = a_replica(product, ReplicaState.FAILED)
    assert (
        lifecycle.mirror(replica, ReplicaState.COPYING, "rucio rule x: REPLICATING", rucio_rule="x") is True
    )
    assert (
        lifecycle.mirror(replica, ReplicaState.COPYING, "rucio rule x: REPLICATING", rucio_rule="x") is False
    )
    assert replica.rucio_rule == "x"
    replica.refresh_from_db()
    assert replica.state == ReplicaState.COPYING


@pytest.mark.parametrize("remade", [False, True])
def test_a_damaged_replica_of_a_rule_still_ok_waits_for_rucio_to_remake_its_files(  # type: ignore[no-untyped-def]
    product, remade: bool
) -> None:
    """Rucio mode: a rule says OK from before Rucio acted on a declaration of bad files until after it
    copied them again; a replica a check found lost becomes available again only when Rucio's own file
    replicas show the files written after the marking (the CI failure of stop 45)."""
    replica = a_replica(product, ReplicaState.AVAILABLE)
    replica.rucio_rule = "rule-1"
    replica.save(update_fields=["rucio_rule"])
    lifecycle.damage(replica, ReplicaState.LOST, "r; lost at UKSRC_DISK")
    rule = RuleInfo(
        rule_id="rule-1",
        account="srcnet",
        rse_expression="UKSRC_DISK",
        copies=1,
        activity="SKA Data Products",
        priority=3,
        state="OK",
        comment=f"{RULE_COMMENT_PREFIX} test",
        source_replica_expression=None,
        expires_at=None,
        error=None,
        locks={"UKSRC_DISK": ["OK"]},
    )
    asked: list[tuple[str, str, object]] = []

    def remade_since(p: DataProduct, rse: str, since: object) -> bool:
        asked.append((p.name, rse, since))
        return remade

    record_rules(product, [rule], policy=None, transfer_errors=lambda _: {}, remade_since=remade_since)
    replica.refresh_from_db()
    assert asked and asked[0][:2] == ("lifecycle", "UKSRC_DISK")
    assert replica.state == (ReplicaState.AVAILABLE if remade else ReplicaState.LOST)


def test_a_product_follows_its_replicas(product) -> None:  # type: ignore[no-untyped-def]
    copies = product.replicas.exclude(endpoint=product.source)
    lifecycle.follow_replicas(product, copies)
    assert product.state == ProductState.REGISTERED  # no copy yet: as it was
    replica = a_replica(product, ReplicaState.COPYING)
    lifecycle.follow_replicas(product, copies)
    assert product.state == ProductState.PLACING
    lifecycle.settle(replica, ReplicaState.AVAILABLE, "arrived")
    lifecycle.follow_replicas(product, copies)
    product.refresh_from_db()
    assert product.state == ProductState.PLACED
