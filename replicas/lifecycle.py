"""The replica lifecycle: the only writer of replica and product state (``make lint`` checks that no other
module assigns them: scripts/check_state_writes.py).

A replica is created in one of the states a copy can start in, then moves only along ``REPLICA_MOVES``; a
product along ``PRODUCT_MOVES``. Any other move raises ``IllegalTransition`` (a bug in the caller, never a
state to store). Three routes end a copy, and all come to ``settle``: the embedded transfer service's job
signal and the poll of an external FTS3 (``replicas.services.settle_request``), and Rucio's rules in Rucio
mode (``replicas.rucio_record``), where Rucio is the authority and its lock states are mirrored
(``mirror``), and a product's state then follows its replicas as everywhere else (``follow_replicas``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.db.models import QuerySet

from topology.models import StorageEndpoint

from .choices import ProductState, ReplicaState
from .models import DataProduct, Replica

P, C, A, F = ReplicaState.PLANNED, ReplicaState.COPYING, ReplicaState.AVAILABLE, ReplicaState.FAILED
L, X = ReplicaState.LOST, ReplicaState.CORRUPT
# A replica its storage no longer holds as the platform recorded it.
DAMAGED: frozenset[str] = frozenset({L, X})

# The states a replica row is made in: planned (placed, to be copied), copying (placed and submitted at
# once), available (the SDP's own copy, or one Rucio reports made), failed (Rucio's view of a stuck rule).
REPLICA_STARTS: frozenset[str] = frozenset({P, C, A, F})
REPLICA_MOVES: Mapping[str, frozenset[str]] = {
    P: frozenset({C, F}),  # submitted; or will never be (its upstream failed, its lane broke)
    C: frozenset({A, F}),  # its transfer ended
    A: frozenset({L, X}),  # a consistency check found it absent, or its bytes not the product's
    F: frozenset({P, C}),  # a row kept as history, placed again (re-route, an operator's choice)
    L: frozenset({P, A, F}),  # healed by a copy (planned); found again (a later check); no source left
    X: frozenset({P, A, F}),  # as lost
}

# Said in the reason of a failed first copy (and of the copies that waited for it) kept as history when its
# product went back to the SDP queue; the row's ``rerouted`` flag is what the code reads (a product's state
# follows its other replicas: ``current_replicas``).
REROUTED = "[re-routed]"

R, PG, PD, FD = ProductState.REGISTERED, ProductState.PLACING, ProductState.PLACED, ProductState.FAILED
PRODUCT_MOVES: Mapping[str, frozenset[str]] = {
    R: frozenset({PG, PD, FD}),  # placed; (Rucio mode: the rules' outcome may be the first thing seen)
    PG: frozenset({R, PD, FD}),  # back to the SDP queue (re-routed), or its copies ended
    PD: frozenset({PG, FD}),  # a further copy asked for (a rule, an operator); or Rucio says it failed
    FD: frozenset({R, PG, PD}),  # re-routed by an operator; placed again; Rucio's rule repaired
}


class IllegalTransition(ValueError):
    """A move the lifecycle does not allow."""


def check_replica_move(old: str, new: str) -> None:
    if old != new and new not in REPLICA_MOVES[old]:
        raise IllegalTransition(f"a replica cannot go from {old} to {new}")


def check_product_move(old: str, new: str) -> None:
    if old != new and new not in PRODUCT_MOVES[old]:
        raise IllegalTransition(f"a product cannot go from {old} to {new}")


# -- replicas -------------------------------------------------------------------------------------------


def new_replica(*, product: DataProduct, endpoint: StorageEndpoint, state: str, **fields: Any) -> Replica:
    """A new replica row of ``product`` at ``endpoint`` in ``state`` (one of REPLICA_STARTS)."""
    if state not in REPLICA_STARTS:
        raise IllegalTransition(f"a replica cannot start {state}")
    return Replica.objects.create(product=product, endpoint=endpoint, state=state, **fields)


def place_replica(
    *, product: DataProduct, endpoint: StorageEndpoint, after_any_failure: bool = False, **fields: Any
) -> Replica:
    """A new replica of ``product`` at ``endpoint`` (one per product and endpoint), or, where a copy kept
    as the history of a re-route is, that row again: its reason then ends with what happened there
    before. ``after_any_failure`` (an operator's explicit choice of destination) reuses any FAILED row
    there, not only a re-route's history: the planner never sends a product back where it failed, a
    person may. ``fields`` holds its ``state`` and whatever else the row takes."""
    state = fields.pop("state")
    failed = product.replicas.select_for_update().filter(endpoint=endpoint, state=F)
    earlier = (failed if after_any_failure else failed.filter(rerouted=True)).first()
    if earlier is None:
        return new_replica(product=product, endpoint=endpoint, state=state, **fields)
    check_replica_move(earlier.state, state)
    before = earlier.reason
    for name, value in {"upstream": None, "via": None, "rerouted": False, **fields}.items():
        setattr(earlier, name, value)
    earlier.state = state
    earlier.reason = f"{earlier.reason} (earlier here: {before})"
    earlier.save()
    return earlier


def move(replica: Replica, state: str, *, reason: str | None = None, save: bool = True) -> Replica:
    """``replica`` to ``state`` (and ``reason``), checked; saved unless the caller saves more fields."""
    check_replica_move(replica.state, state)
    fields = ["state", "updated"]
    replica.state = state
    if reason is not None:
        replica.reason = reason
        fields.append("reason")
    if save:
        replica.save(update_fields=fields)
    return replica


def fail_if_planned(replica_id: int, reason: str) -> int:
    """The replica to FAILED with ``reason`` if it is still PLANNED (a conditional update, safe against a
    concurrent submission); returns 1 if it moved, else 0."""
    return Replica.objects.filter(pk=replica_id, state=P).update(state=F, reason=reason)


def mirror(replica: Replica, state: str, reason: str, *, rucio_rule: str) -> bool:
    """Rucio mode: the replica as the locks of ``rucio_rule`` say (Rucio is the authority there, so any move
    of its is taken, including a repaired rule's FAILED to COPYING; the caller, ``record_rules``, holds a
    damaged replica back from AVAILABLE until Rucio has written its files again). Returns whether anything
    changed."""
    if state not in REPLICA_STARTS:
        raise IllegalTransition(f"Rucio's lock state maps to no replica state: {state}")
    if (replica.state, replica.reason, replica.rucio_rule) == (state, reason, rucio_rule):
        return False
    replica.state, replica.reason, replica.rucio_rule = state, reason, rucio_rule
    replica.save(update_fields=["state", "reason", "rucio_rule", "updated"])
    return True


def settle(replica: Replica, state: str, reason: str) -> bool:
    """A copy ended (any route): ``replica`` AVAILABLE or FAILED with ``reason``; settling it again the
    same way changes nothing. Returns whether it changed."""
    if state not in (A, F):
        raise IllegalTransition(f"a copy ends available or failed, not {state}")
    if (replica.state, replica.reason) == (state, reason):
        return False
    move(replica, state, reason=reason)
    return True


def fail_waiting(waiting: Iterable[Replica], why: str, *, rerouted: bool = False) -> None:
    """Copies that were to be made from a replica that failed: FAILED, ``why`` added to each reason; kept
    as the history of a re-route when ``rerouted`` (they go back to the queue with their product)."""
    for copy in waiting:
        if rerouted:
            keep_as_reroute_history(copy, f"{copy.reason}; {why}")
        else:
            move(copy, F, reason=f"{copy.reason}; {why}")


def keep_as_reroute_history(replica: Replica, reason: str) -> Replica:
    """``replica`` FAILED (if it is not yet) with ``reason``, kept as the history of a re-route: no longer one
    of its product's current replicas (``rerouted``), and its row reused if the product comes back there."""
    move(replica, F, reason=reason, save=False)
    replica.rerouted = True
    replica.save(update_fields=["state", "reason", "rerouted", "updated"])
    return replica


def damage(replica: Replica, state: str, reason: str) -> bool:
    """A consistency check found ``replica`` LOST or CORRUPT at its storage; returns whether it changed.
    Only an AVAILABLE replica (or one already damaged, whose reason is then updated) can be."""
    if state not in DAMAGED:
        raise IllegalTransition(f"a replica is found lost or corrupt, not {state}")
    if (replica.state, replica.reason) == (state, reason):
        return False
    if replica.state in DAMAGED:
        replica.state, replica.reason = state, reason
        replica.save(update_fields=["state", "reason", "updated"])
        return True
    move(replica, state, reason=reason)
    return True


def heal(replica: Replica, source: Replica, reason: str) -> Replica:
    """A damaged ``replica`` to be copied again from ``source`` (an AVAILABLE replica of its product): it is
    PLANNED with ``source`` upstream, so the push loop's next plan carries the copy like any waiting copy;
    the copy overwrites what the storage holds (``repairs`` counts the heals)."""
    if replica.state not in DAMAGED:
        raise IllegalTransition(f"only a lost or corrupt replica is healed, not a {replica.state} one")
    if source.state != A or source.product_id != replica.product_id or source.pk == replica.pk:
        raise IllegalTransition("a replica is healed from another available replica of its product")
    move(replica, P, reason=reason, save=False)
    replica.upstream, replica.via = source, None
    replica.repairs += 1
    replica.save(update_fields=["state", "reason", "upstream", "via", "repairs", "updated"])
    return replica


def give_up(replica: Replica, reason: str) -> Replica:
    """A damaged replica with no available replica of its product left to heal it from: FAILED."""
    if replica.state not in DAMAGED:
        raise IllegalTransition(f"only a lost or corrupt replica is given up, not a {replica.state} one")
    return move(replica, F, reason=reason)


# -- products -------------------------------------------------------------------------------------------


def move_product(product: DataProduct, state: str, *, also: Iterable[str] = ()) -> DataProduct:
    """``product`` to ``state``, checked, saved with the fields in ``also``."""
    check_product_move(product.state, state)
    product.state = state
    product.save(update_fields=["state", *also])
    return product


def follow_replicas(
    product: DataProduct, replicas: QuerySet[Replica], *, pending: bool = True
) -> DataProduct:
    """A product's state from its current replicas (not its SDP copy, not history): FAILED if one failed,
    PLACED when all are available, else (copies still to come) PLACING, or as it was with ``pending``
    False; unchanged without any."""
    # The SDP's own copy found damaged changes nothing of where the product is (the platform never writes
    # there; a first copy still to be made from it fails for its source).
    replicas = replicas.exclude(endpoint_id=product.source_id, state__in=DAMAGED)
    states = set(replicas.values_list("state", flat=True))
    if not states:
        return product
    if states & DAMAGED and F not in states:
        new = PG  # being healed (``heal``): placed again once the copies arrive
    elif F in states:
        new = FD
    elif states == {A}:
        new = PD
    elif pending:
        new = PG
    else:
        return product
    if product.state != new:
        move_product(product, new)
    return product
