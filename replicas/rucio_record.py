"""Recording a product's Rucio rules as its replicas (followed by replicas/rucio.py; no Rucio import)."""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence

from django.db import transaction

from topology.models import StorageEndpoint

from . import lifecycle
from .choices import ReplicaState
from .models import DataProduct, Replica, ReplicaPolicy
from .rucio_sync import RUCIO_RULE_REASON, replica_state_of_locks
from .rucio_types import RuleInfo

# Best first when one destination is covered by several rules.
_STATE_RANK = {
    ReplicaState.AVAILABLE: 0,
    ReplicaState.COPYING: 1,
    ReplicaState.PLANNED: 2,
    ReplicaState.FAILED: 3,
}


def record_rules(
    product: DataProduct,
    rules: Sequence[RuleInfo],
    *,
    policy: ReplicaPolicy | None,
    transfer_errors: Callable[[str], dict[str, str]],
    remade_since: Callable[[DataProduct, str, datetime.datetime], bool],
) -> list[Replica]:
    """The product's replicas as its rules say, each destination from the best rule covering it (a failed
    lock's reason from ``transfer_errors``, Rucio's request errors by RSE), and the product's state from
    its replicas; in one transaction. Returns the replicas touched.

    A replica a consistency check found lost or corrupt stays so while its rule's locks still say OK,
    until ``remade_since`` (Rucio's file replicas there) shows its files written again after the marking:
    a rule is OK from before Rucio acted on the declaration until long after the storage lost the file."""
    # destination -> (state, reason, rule id) from the best rule covering it
    best: dict[str, tuple[str, str, str]] = {}
    errors: dict[str, dict[str, str]] = {}
    for rule in rules:
        for rse, lock_states in rule.locks.items():
            state = replica_state_of_locks(lock_states)
            what = (
                f"{RUCIO_RULE_REASON} {rule.rule_id} ({rule.activity}, {rule.rse_expression})"
                if rule.ours
                else f"{RUCIO_RULE_REASON} {rule.rule_id} created by account {rule.account} "
                f"outside the platform ({rule.activity}, {rule.rse_expression})"
            )
            reason = f"{what}: {rule.state}"
            if state == ReplicaState.FAILED:
                if rule.rule_id not in errors:
                    errors[rule.rule_id] = transfer_errors(rule.rule_id)
                detail = errors[rule.rule_id].get(rse) or errors[rule.rule_id].get("*") or rule.error
                reason += f": {detail or 'transfers stuck'}"
            current = best.get(rse)
            if current is None or _STATE_RANK[ReplicaState(state)] < _STATE_RANK[ReplicaState(current[0])]:
                best[rse] = (state, reason, rule.rule_id)
    touched: list[Replica] = []
    with transaction.atomic():
        product = DataProduct.objects.select_for_update().get(pk=product.pk)
        endpoints = {e.name: e for e in StorageEndpoint.objects.filter(name__in=list(best))}
        for rse, (state, reason, rule_id) in sorted(best.items()):
            endpoint = endpoints.get(rse)
            if endpoint is None or endpoint.pk == product.source_id:
                continue
            replica = Replica.objects.filter(product=product, endpoint=endpoint).first()
            if replica is None:
                replica = lifecycle.new_replica(
                    product=product,
                    endpoint=endpoint,
                    state=state,
                    reason=reason,
                    policy=policy,
                    rucio_rule=rule_id,
                )
            else:
                # A replica the push loop placed keeps the plan's reason in front of the rule's.
                reason = f"{replica.placement}; {reason}" if replica.placement else reason
                if (
                    replica.state in lifecycle.DAMAGED
                    and state == ReplicaState.AVAILABLE
                    and not remade_since(product, rse, replica.updated)
                ):
                    continue
                lifecycle.mirror(replica, state, reason, rucio_rule=rule_id)
            touched.append(replica)
        lifecycle.follow_replicas(product, product.replicas.exclude(endpoint_id=product.source_id))
    return touched
