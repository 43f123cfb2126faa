"""Handing a plan to the push loop: which legs are due, in what order, with what hints."""

from __future__ import annotations

from dataclasses import replace

from schedulers.planning import PolicyKind, Product, ReplicaPolicy, plan
from schedulers.planning.dispatch import due_legs, job_hints

from .helpers import star


def _plan():  # type: ignore[no-untyped-def]
    products = [Product(f"p{i}", "T1", 100e9, 0.0) for i in range(6)] + [Product("late", "T1", 1e9, 600.0)]
    return plan(
        products,
        star(),
        ReplicaPolicy(PolicyKind.TWO_REPLICAS, partners={"A": "B", "B": "A", "C": "D", "D": "C"}),
    )


def test_first_legs_of_free_lanes_are_due_and_second_copies_wait() -> None:
    p = _plan()
    due = due_legs(p, now_s=0.0, slot_seconds=60.0, done=set(), busy_lanes=set())
    lanes = [(p.legs[i].source, p.legs[i].destination) for i in due]
    assert len(lanes) == len(set(lanes)), "at most one leg per lane"
    assert all(p.legs[i].source == "T1" for i in due), "second copies wait for their first copy"
    assert all(p.legs[i].start_slot == 0 for i in due)


def test_a_second_copy_is_due_once_its_first_copy_has_delivered() -> None:
    p = _plan()
    first = next(i for i, leg in enumerate(p.legs) if leg.source == "T1")
    second = next(i for i, leg in enumerate(p.legs) if leg.depends_on == first)
    later = p.legs[second].start_s + 1
    assert second in due_legs(p, now_s=later, slot_seconds=60.0, done={first}, busy_lanes=set())
    assert second not in due_legs(p, now_s=later, slot_seconds=60.0, done=set(), busy_lanes=set())


def test_a_busy_lane_and_a_future_slot_hold_legs_back() -> None:
    p = _plan()
    due = due_legs(p, now_s=0.0, slot_seconds=60.0, done=set(), busy_lanes={("T1", "A")})
    assert all((p.legs[i].source, p.legs[i].destination) != ("T1", "A") for i in due)
    late = next(i for i, leg in enumerate(p.legs) if leg.product_id == "late")
    assert late not in due_legs(p, now_s=0.0, slot_seconds=60.0, done=set(range(late)), busy_lanes=set())
    assert late in due_legs(
        p, now_s=p.legs[late].start_s, slot_seconds=60.0, done=set(range(late)), busy_lanes=set()
    )


def test_a_lane_with_room_for_two_takes_its_next_leg_in_plan_order() -> None:
    """Lane depth: the next product waits at the transfer service behind the current one, so its slot need
    not have come; never more than the room, never ahead of a leg that waits, never on a full lane."""
    p = _plan()
    t1_a = [i for i, leg in enumerate(p.legs) if (leg.source, leg.destination) == ("T1", "A")]
    # The lane's second product starts, in plan time, when the first has finished.
    assert len(t1_a) >= 3 and p.legs[t1_a[1]].start_s >= p.legs[t1_a[0]].finish_s
    due = due_legs(p, now_s=0.0, slot_seconds=60.0, done=set(), busy_lanes=set(), default_room=2)
    assert [i for i in due if i in t1_a] == t1_a[:2]
    # One product already on the lane: room for one more, the lane's first unfinished leg.
    room = {("T1", "A"): 1}
    due = due_legs(p, now_s=0.0, slot_seconds=60.0, done=set(), busy_lanes=set(), room=room, default_room=2)
    assert [i for i in due if i in t1_a] == t1_a[:1]
    full = due_legs(p, now_s=0.0, slot_seconds=60.0, done=set(), busy_lanes={("T1", "A")}, default_room=2)
    assert not [i for i in full if i in t1_a]
    # Second copies wait for their first copy even with room: A -> B takes nothing yet.
    due = due_legs(p, now_s=0.0, slot_seconds=60.0, done=set(), busy_lanes=set(), default_room=3)
    assert all(p.legs[i].source == "T1" for i in due)


def test_job_hints_carry_the_plan() -> None:
    leg = _plan().legs[0]
    hints = job_hints(leg)
    assert (hints.priority, hints.concurrent_files, hints.max_rate_bps) == (
        leg.priority,
        leg.files,
        leg.rate_bps,
    )
    assert hints.streams_per_file * hints.concurrent_files == hints.streams >= leg.streams
    assert hints.activity == "SKA push (primary)"


def test_the_lanes_streams_are_shared_by_the_files_it_copies_at_once() -> None:
    # The plan's streams are the lane's (tuning.py); FTS3's nostreams is per copy.
    leg = replace(_plan().legs[0], streams=8, files=2)
    assert (job_hints(leg).streams_per_file, job_hints(leg).streams) == (4, 8)
    # Rounded up, so that every file has its share; what the lane then runs is what the job says.
    odd = job_hints(replace(leg, streams=5, files=2))
    assert (odd.streams_per_file, odd.streams) == (3, 6)
    one = job_hints(replace(leg, streams=1, files=3))
    assert (one.streams_per_file, one.streams) == (1, 3)
    # A single file never asks for more than every third-party-copy scheme runs (XRootD's 15).
    big = job_hints(replace(leg, streams=16, files=1))
    assert (big.streams_per_file, big.streams) == (15, 15)
