"""Which rules of a follower round's listing the replicas already show (replicas/rucio_mirrored.py)."""

from __future__ import annotations

from typing import Any

from replicas.rucio_mirrored import already_mirrored, state_of_counts


def rule(rule_id: str = "r1", state: str = "REPLICATING", copies: int = 1, **counts: int) -> dict[str, Any]:
    return {"id": rule_id, "state": state, "copies": copies, **counts}


def test_lock_counts_give_the_replica_state_the_locks_would() -> None:
    assert state_of_counts(rule(locks_ok_cnt=3, locks_replicating_cnt=2)) == "copying"
    assert state_of_counts(rule(locks_ok_cnt=3, locks_stuck_cnt=1, locks_replicating_cnt=1)) == "failed"
    assert state_of_counts(rule(locks_ok_cnt=5)) == "available"
    assert state_of_counts(rule()) == "planned"


def test_a_copying_rule_its_replica_shows_copying_needs_no_sync() -> None:
    assert already_mirrored([rule(locks_ok_cnt=1, locks_replicating_cnt=4)], [("r1", "copying")])
    assert already_mirrored([rule(state="OK", locks_ok_cnt=5)], [("r1", "available"), ("r0", "failed")])


def test_a_rule_whose_files_are_all_copied_while_the_replica_copies_needs_a_sync() -> None:
    assert not already_mirrored([rule(locks_ok_cnt=5)], [("r1", "copying")])
    assert not already_mirrored([rule(locks_ok_cnt=4, locks_stuck_cnt=1)], [("r1", "copying")])


def test_a_rule_no_replica_records_or_two_replicas_record_is_synced() -> None:
    assert not already_mirrored([rule(locks_replicating_cnt=5)], [("other", "copying")])
    assert not already_mirrored([rule(locks_replicating_cnt=5)], [("r1", "copying"), ("r1", "copying")])


def test_stuck_suspended_and_many_copy_rules_are_always_synced() -> None:
    assert not already_mirrored([rule(state="STUCK", locks_stuck_cnt=1)], [("r1", "failed")])
    assert not already_mirrored([rule(state="SUSPENDED", locks_replicating_cnt=1)], [("r1", "copying")])
    two = [("r1", "copying"), ("r1", "copying")]
    assert not already_mirrored([rule(copies=2, locks_replicating_cnt=2)], two)


def test_every_listed_rule_of_the_product_must_be_shown() -> None:
    rules = [rule("a", locks_replicating_cnt=1), rule("b", state="OK", locks_ok_cnt=2)]
    assert already_mirrored(rules, [("a", "copying"), ("b", "available")])
    assert not already_mirrored(rules, [("a", "copying"), ("b", "copying")])
