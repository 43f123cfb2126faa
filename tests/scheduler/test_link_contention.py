"""A transfer that fell short of its plan while a link of its path was full was limited by its share of
that link, not by its streams: the streams model does not read it as a reason for more streams
(schedulers/planning/contention.py; docs/scheduler.md, "Streams per copy")."""

from __future__ import annotations

import pytest

from schedulers.planning import PlanConfig, PlanInputError, Product, ReplicaPolicy, plan
from schedulers.planning.contention import LINK_FULL, mark_link_limited
from schedulers.planning.dispatch import job_hints
from schedulers.planning.tuning import HISTORY, correction, stream_ceiling_bps
from schedulers.planning.types import LiveState, Measurement

from .helpers import star

MIB = 2**20
ACCESS = 100e6  # the telescope's access link, shared by its lanes to A and B
CEILING = stream_ceiling_bps(2**30, 223.0, 0.0, PlanConfig().mss_bytes)


def shared_access():  # type: ignore[no-untyped-def]
    return star(
        telescopes=("T1",), srcs={"A": 1.0, "B": 1.0}, centre=None, capacity={"x-T1": ACCESS}, rtt_ms=223.0
    )


def job(
    lane: str, start: float, end: float, bps: float, *, streams: int = 2, planned: float = 60e6
) -> Measurement:
    return Measurement("T1", lane, streams, bps, paced_bps=planned, files=2, start_s=start, end_s=end)


def marked(measurements: list[Measurement]) -> list[bool]:
    return [m.link_limited for m in mark_link_limited(measurements, shared_access())]


def test_a_transfer_is_link_limited_when_its_path_carried_the_full_link_over_its_span() -> None:
    # A's job and B's together carried 93 of the access link's 100 Mbit/s while A's ran: full.
    assert marked([job("A", 0, 10, 45e6), job("B", 0, 10, 48e6)]) == [True, True]
    # Alone on the link, A's 45 Mbit/s left it half empty: its shortfall was its own.
    assert marked([job("A", 0, 10, 45e6)]) == [False]
    # B's job overlapped half of A's: 45 + 24 Mbit/s over A's span, below LINK_FULL; A's over B's span
    # [5, 15] is the same.
    assert marked([job("A", 0, 10, 45e6), job("B", 5, 15, 48e6)]) == [False, False]
    # Just at and just below LINK_FULL of the capacity.
    assert marked([job("A", 0, 10, LINK_FULL * ACCESS)]) == [True]
    assert marked([job("A", 0, 10, LINK_FULL * ACCESS * 0.99)]) == [False]


def test_what_is_not_judged_stays_as_it_was() -> None:
    no_span = Measurement("T1", "A", 2, 95e6, paced_bps=60e6, files=2)
    unknown_lane = Measurement("T1", "Q", 2, 95e6, start_s=0, end_s=10)  # no path in the topology
    assert marked([no_span, job("B", 0, 10, 95e6), unknown_lane]) == [False, True, False]
    # Only each lane's last HISTORY measurements are read by the streams model, and so judged.
    older = [job("A", i, i + 1, 95e6) for i in range(HISTORY + 3)]
    assert marked(older) == [False] * 3 + [True] * HISTORY


def test_a_shortfall_on_a_full_link_only_bounds_the_streams_efficiency_from_below() -> None:
    # A's jobs got 30 of the 60 Mbit/s the plan gave them, three times, while B's filled the rest.
    history = [
        m
        for i in range(3)
        for m in (job("A", 10 * i, 10 * i + 10, 30e6), job("B", 10 * i, 10 * i + 10, 65e6))
    ]
    judged = mark_link_limited(history, shared_access())
    assert correction(judged, "T1", "A", CEILING) == 1.0
    # The same jobs with the link not full: stream-limited, 15 Mbit/s per stream.
    alone = [m for m in history if m.destination == "A"]
    assert correction(mark_link_limited(alone, shared_access()), "T1", "A", CEILING) == pytest.approx(
        15e6 / CEILING
    )


def test_the_plan_asks_no_more_streams_for_copies_that_fell_short_on_a_full_link() -> None:
    products = [Product(f"p{i}", "T1", 64 * MIB, 0.0, files=2, destination="A") for i in range(4)]
    history = [
        m
        for i in range(3)
        for m in (job("A", 10 * i, 10 * i + 10, 30e6), job("B", 10 * i, 10 * i + 10, 65e6))
    ]
    shared = plan(products, shared_access(), ReplicaPolicy(), state=LiveState(measurements=tuple(history)))
    alone = [m for m in history if m.destination == "A"]
    short = plan(products, shared_access(), ReplicaPolicy(), state=LiveState(measurements=tuple(alone)))
    # On its own the lane's streams fell short: the plan asks more of them per copy.
    assert job_hints(short.legs[0]).streams_per_file > 1
    # On the full link the shortfall was the share: one stream per copy, as physics says.
    assert job_hints(shared.legs[0]).streams_per_file == 1
    assert shared.legs[0].streams < short.legs[0].streams


def test_the_plan_adds_no_copies_for_time_lost_to_the_share_of_a_full_link() -> None:
    """A's copies took 10 s beyond their planned share each, three times: alone on the link that is dead
    time the lane's copies must overlap (more copies in flight); while B's filled the link it was the share
    A did not get, which more copies cannot win back on a full link."""
    products = [Product(f"p{i}", "T1", 64 * MIB, 0.0, files=2, destination="A") for i in range(4)]
    slow = [
        Measurement(
            "T1", "A", 2, 30e6, paced_bps=60e6, files=2, start_s=10 * i, end_s=10 * i + 10, copy_dead_s=10.0
        )
        for i in range(3)
    ]
    others = [job("B", 10 * i, 10 * i + 10, 65e6) for i in range(3)]
    shared = plan(products, shared_access(), ReplicaPolicy(), LiveState(measurements=(*slow, *others)))
    alone = plan(products, shared_access(), ReplicaPolicy(), LiveState(measurements=tuple(slow)))
    idle = plan(products, shared_access(), ReplicaPolicy())
    assert alone.legs[0].lane_copies > idle.legs[0].lane_copies
    assert shared.legs[0].lane_copies == idle.legs[0].lane_copies


def test_transfers_still_running_count_in_the_links_load() -> None:
    """A's job has just ended; B's copies that ran with it are still running, 50 Mbit/s so far: the link
    was full while A's ran, which the finished jobs alone do not show. What is running is load only: it is
    not judged, nor read as a measurement of its lane."""
    a = job("A", 0, 10, 45e6)
    running = (Measurement("T1", "B", 1, 50e6, start_s=0, end_s=10),)
    assert [m.link_limited for m in mark_link_limited([a], shared_access(), running)] == [True]
    assert marked([a]) == [False]
    # Running copies on another link (a lane whose path does not cross T1's access) add nothing.
    elsewhere = (Measurement("A", "B", 1, 95e6, start_s=0, end_s=10),)
    assert [m.link_limited for m in mark_link_limited([a], shared_access(), elsewhere)] == [False]
    # The plan reads them from its live state: the A lane's shortfall is its share, one stream per copy.
    products = [Product(f"p{i}", "T1", 64 * MIB, 0.0, files=2, destination="A") for i in range(4)]
    history = tuple(job("A", 10 * i, 10 * i + 10, 30e6) for i in range(3))
    load = (Measurement("T1", "B", 1, 65e6, start_s=0, end_s=30),)
    with_load = plan(
        products, shared_access(), ReplicaPolicy(), LiveState(measurements=history, running=load)
    )
    without = plan(products, shared_access(), ReplicaPolicy(), LiveState(measurements=history))
    assert job_hints(with_load.legs[0]).streams_per_file == 1 < job_hints(without.legs[0]).streams_per_file


@pytest.mark.parametrize(("start", "end"), [(10.0, 5.0), (float("nan"), 5.0), (0.0, float("inf"))])
@pytest.mark.parametrize("field", ["measurements", "running"])
def test_a_measurement_with_a_bad_span_is_refused(start: float, end: float, field: str) -> None:
    bad = Measurement("T1", "A", 1, 1e6, start_s=start, end_s=end)
    with pytest.raises(PlanInputError, match=f"{field}: bad span"):
        state = LiveState(measurements=(bad,)) if field == "measurements" else LiveState(running=(bad,))
        plan([], shared_access(), ReplicaPolicy(), state=state)


def test_the_simulators_plans_see_its_copies_in_flight_as_running_load(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """As the push loop hands its planner the copies still running (LiveState.running), the simulator
    hands its own: each open copy's bytes since it opened, over [opened, now]."""
    from schedulers.simulation import engine
    from schedulers.simulation.engine import SimConfig, simulate

    seen = []

    def planning(products, topology, policy, state, config, **kwargs):  # type: ignore[no-untyped-def]
        seen.append((state.now_s, state.running))
        return real_plan(products, topology, policy, state, config, **kwargs)

    real_plan = engine.planner.plan
    monkeypatch.setattr(engine.planner, "plan", planning)
    topo = star(telescopes=("T1",), srcs={"A": 1.0}, centre=None, capacity={"x-T1": 10e9}, rtt_ms=100.0)
    config = SimConfig(duration_s=30, replan_s=5.0, plan=PlanConfig(target_utilisation=1.0), paced=False)
    simulate(topo, ReplicaPolicy(), [Product("p1", "T1", 2.5e10, 0.0, destination="A")], config)
    # p1 (25 GB at 10 Gbit/s, about 20 s) is in flight at the plans of 5, 10 and 15 s.
    during = [(now, running) for now, running in seen if 0 < now < 20]
    assert [now for now, _ in during] == pytest.approx([5.0, 10.0, 15.0])
    for now, running in during:
        (copy,) = running
        assert (copy.source, copy.destination) == ("T1", "A")
        assert copy.start_s == pytest.approx(0.0) and copy.end_s == pytest.approx(now)
        # What it carried since it opened: the link's rate once slow start is over, a little less before.
        assert 0.8 * 10e9 < copy.throughput_bps <= 10e9
    assert seen[0][1] == ()  # nothing open at the first plan
