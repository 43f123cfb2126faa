"""Which changed rules the platform's replicas already show, so that following Rucio costs what changed.

A rule's ``updated_at`` moves with each of its lock counts: while a product's files copy, its rule changes
every few seconds and each round of ``follow_rules`` lists it. Syncing such a product again (its rules and
every lock read back from Rucio, its replicas written) changes nothing until the replica's state would: a
round measured through Rucio's conveyor at 2 000 files (bench/control_plane/end_to_end.py --through rucio,
2026-11-30) spent 24 s a round doing so, the rounds overlapping until every worker process followed and no
copy ran. A one-copy rule's listing says its replica's state exactly (its locks all at one RSE, counted by
state); when the replica the rule made already records that rule in that state, there is nothing to sync.
Only the healthy flow's states are skipped so (a rule REPLICATING or OK): a rule STUCK, SUSPENDED or waiting
is synced every round (its reason may change with nothing else), as is a rule of more copies (several RSEs,
each its own state)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .choices import ReplicaState

# The rule states whose changes a replica may already show (the others are synced every round).
SKIPPED_RULE_STATES = {"REPLICATING", "OK"}


def state_of_counts(rule: Mapping[str, Any]) -> str:
    """The replica state a one-copy rule's lock counts give (``replica_state_of_locks`` of its locks)."""
    if int(rule.get("locks_stuck_cnt") or 0):
        return ReplicaState.FAILED
    if int(rule.get("locks_replicating_cnt") or 0):
        return ReplicaState.COPYING
    if int(rule.get("locks_ok_cnt") or 0):
        return ReplicaState.AVAILABLE
    return ReplicaState.PLANNED


def already_mirrored(rules: Iterable[Mapping[str, Any]], replicas: Iterable[tuple[str, str]]) -> bool:
    """Whether every rule of ``rules`` (Rucio's listing, one product's) is a one-copy rule that exactly one
    of the product's ``replicas`` ((rule id, state) pairs) records, in the state its counts give."""
    recorded: dict[str, list[str]] = {}
    for rule_id, state in replicas:
        recorded.setdefault(rule_id, []).append(state)
    for rule in rules:
        if str(rule.get("state")) not in SKIPPED_RULE_STATES or int(rule.get("copies") or 0) != 1:
            return False
        if recorded.get(str(rule["id"])) != [state_of_counts(rule)]:
            return False
    return True
