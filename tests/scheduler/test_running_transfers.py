"""What the push loop's copies still running have carried so far reaches the plan as load on their links
(measurements.running_transfers, LiveState.running; contention.mark_link_limited reads it)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from schedulers.arrivals import copies_in_flight
from schedulers.measurements import running_transfers
from tests.factories import push_job_for

pytestmark = pytest.mark.django_db
GB = 10**9
LANE = ("SKA1-Low", "UKSRC")


def _copy_running(now: dt.datetime) -> None:
    """A first copy to UKSRC whose job (the push loop's: it names the replica) has three files: one
    finished (20 s to 5 s ago), one active (started 10 s ago, 0.3 GB seen at its destination 2 s ago) and
    one still queued at the service."""
    from replicas.models import Replica
    from replicas.services import FileSpec, register_product
    from topology.models import StorageEndpoint, Telescope
    from transfers.models import TransferFile

    files = [FileSpec(f"{i}.ms", GB, "0cc737eb") for i in range(3)]
    low = Telescope.objects.get(name="SKA1-Low")
    product = register_product(scope="ska", name="moving", telescope=low, priority=3, files=files)
    replica = Replica.objects.create(
        product=product, endpoint=StorageEndpoint.objects.get(name="UKSRC_DISK"), state="copying"
    )
    job = push_job_for(replica, lane=LANE)
    ago = lambda s: now - dt.timedelta(seconds=s)  # noqa: E731
    rows: list[dict[str, Any]] = [
        {"state": "FINISHED", "start_time": ago(20), "finish_time": ago(5)},
        {"state": "ACTIVE", "start_time": ago(10), "transferred_bytes": 3 * GB // 10, "progress_at": ago(2)},
        {"state": "SUBMITTED"},
    ]
    for index, row in enumerate(rows):
        TransferFile.objects.create(
            job=job,
            file_index=index,
            source_surl=f"davs://sdp/moving/{index}",
            dest_surl=f"davs://uk/moving/{index}",
            filesize=GB,
            **row,
        )


def test_a_running_copys_files_are_load_over_what_they_have_carried_so_far(reference_topology) -> None:  # type: ignore[no-untyped-def]
    now = dt.datetime.now(dt.UTC)
    _copy_running(now)
    running = sorted(running_transfers(copies_in_flight(now, {}), now), key=lambda m: m.start_s or 0)
    # The finished file: 1 GB over its 15 s; the active one at the rate its progress showed (0.3 GB in the
    # 8 s to its last look), from its start to now; the queued one nothing. Epoch seconds, the lane
    # measurements' clock.
    assert [(m.source, m.destination) for m in running] == [LANE, LANE]
    finished, active = running
    assert finished.throughput_bps == pytest.approx(GB * 8 / 15)
    assert (finished.start_s, finished.end_s) == pytest.approx(
        ((now - dt.timedelta(seconds=20)).timestamp(), (now - dt.timedelta(seconds=5)).timestamp())
    )
    assert active.throughput_bps == pytest.approx(0.3 * GB * 8 / 8)
    assert active.end_s == pytest.approx(now.timestamp())
    # Once all its files have finished, its job is over and becomes a measurement: no longer load here
    # (its replica is still copying until its checksums are verified).
    from transfers.models import TransferFile

    TransferFile.objects.update(state="FINISHED", start_time=now - dt.timedelta(seconds=9), finish_time=now)
    assert running_transfers(copies_in_flight(now, {}), now) == ()


def test_the_cycles_plan_sees_the_running_copies(reference_topology, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The loop and the API's plan preview plan through ``cycle_plans``: its lanes' load carries them,
    and the planner gets them in its live state."""
    from replicas.services import FileSpec, register_product
    from schedulers import telescope_plans
    from schedulers.planning import PlanConfig
    from schedulers.telescope_plans import cycle_plans
    from topology.models import Telescope

    seen = []

    def planning(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(args[3].running)  # plan(products, topology, policy, state, ...)
        return real_plan(*args, **kwargs)

    real_plan = telescope_plans.plan
    monkeypatch.setattr(telescope_plans, "plan", planning)

    now = dt.datetime.now(dt.UTC)
    _copy_running(now)
    low = Telescope.objects.get(name="SKA1-Low")
    register_product(
        scope="ska", name="queued", telescope=low, priority=3, files=[FileSpec("q.ms", GB, "0cc737eb")]
    )
    errors: list[str] = []
    plans = list(cycle_plans(now=now, config=PlanConfig(), errors=errors))
    assert errors == [] and plans
    for _, load in plans:
        assert len(load.running) == 2 and {(m.source, m.destination) for m in load.running} == {LANE}
    assert seen and all(running == plans[0][1].running for running in seen)
