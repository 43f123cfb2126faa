"""A push cycle plans the head of each telescope's SDP queue (``SRCNET_PLAN_HORIZON_PRODUCTS``), chosen in the
order the planner places products, so its cost does not grow with the queue; the rest wait for later cycles
and keep no stale prediction."""

from __future__ import annotations

import datetime as dt
import random

import pytest

from replicas.models import DataProduct, ProductFile
from schedulers.arrivals import BEYOND_HORIZON
from schedulers.loop import push_cycle
from schedulers.planning.planner import Planner
from schedulers.planning.policies import ReplicaPolicy
from schedulers.planning.types import LiveState, PlanConfig
from schedulers.snapshot import head_of_queue, queued_products, topology_snapshot
from topology.models import StorageEndpoint, Telescope

pytestmark = pytest.mark.django_db


def waiting(name: str, telescope: str, *, priority: int = 3, deadline_in: float | None = None) -> DataProduct:
    tel = Telescope.objects.get(name=telescope)
    made = DataProduct.objects.create(
        scope="ska",
        name=name,
        telescope=tel,
        source=StorageEndpoint.objects.get(name=f"{telescope.upper()}_SDP"),
        priority=priority,
        deadline=dt.datetime.now(dt.UTC) + dt.timedelta(seconds=deadline_in)
        if deadline_in is not None
        else None,
    )
    ProductFile.objects.create(product=made, name="f.ms", size_bytes=10**9, adler32="00000001")
    return made


def test_the_head_is_what_the_planner_places_first(reference_topology) -> None:  # type: ignore[no-untyped-def]
    draw = random.Random(34)
    for n in range(40):
        telescope = ("SKA1-Low", "SKA1-Mid")[n % 2]
        # Deadlines on both sides of the buffer's own (a day and more), some none, some past.
        deadline = draw.choice([None, -600.0, 3600.0, 86400.0 * 3, 86400.0 * 30, 86400.0 * 365])
        waiting(f"p{n:02d}", telescope, priority=draw.randint(1, 5), deadline_in=deadline)
    now = dt.datetime.now(dt.UTC)
    everything = queued_products(now=now, horizon=1000)
    assert len(everything) == 40
    planner = Planner(topology_snapshot(), ReplicaPolicy(), LiveState(), PlanConfig(), everything)
    order = sorted(everything, key=lambda p: (p.arrival_s, -p.priority, planner._deadline(p), p.id))
    for horizon in (1, 5, 13):
        head = {p.id for p in queued_products(now=now, horizon=horizon)}
        for telescope in ("SKA1-Low", "SKA1-Mid"):
            first = [p.id for p in order if p.telescope == telescope][:horizon]
            assert {d for d in head if d in first} == set(first), (horizon, telescope)
        assert len(head) == 2 * horizon
    assert head_of_queue(now, 1) and len(head_of_queue(now, 1)) == 2


def test_a_cycle_plans_its_horizon_and_the_rest_say_why_they_have_no_time(
    reference_topology, settings
) -> None:  # type: ignore[no-untyped-def]
    settings.SRCNET_PLAN_HORIZON_PRODUCTS = 2
    for n in range(5):
        waiting(f"low{n}", "SKA1-Low", priority=1)
    cycle = push_cycle()
    assert cycle.error == "" and cycle.products_queued == 5
    assert cycle.legs_planned == 2, cycle.legs_planned  # one first copy for each product of the head
    notes = dict(DataProduct.objects.filter(state="registered").values_list("name", "arrival_note"))
    # Those planned but not yet handed on have a prediction; nothing was written for the ones beyond.
    assert all(note == "" for name, note in notes.items() if name not in {"low0", "low1"}), notes
    # A product of higher priority arrives: a product the last cycle planned falls beyond the horizon and
    # keeps no prediction of the earlier plan.
    DataProduct.objects.filter(name__in=["low0", "low1"]).update(
        predicted_arrival=dt.datetime.now(dt.UTC), arrival_note="an earlier plan's"
    )
    DataProduct.objects.filter(name__in=["low0", "low1"]).update(state="placing")  # handed on meanwhile
    DataProduct.objects.filter(name="low2").update(
        predicted_arrival=dt.datetime.now(dt.UTC), arrival_note="an earlier plan's"
    )
    waiting("urgent1", "SKA1-Low", priority=5)
    waiting("urgent2", "SKA1-Low", priority=5)
    push_cycle()
    low2 = DataProduct.objects.get(name="low2")
    assert low2.predicted_arrival is None and low2.arrival_note == BEYOND_HORIZON
    assert DataProduct.objects.get(name="urgent1").arrival_note != BEYOND_HORIZON
