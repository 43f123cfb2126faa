"""Which legs of a plan to hand to the transfertool now (pure): the bridge from a plan to the push loop.

A leg is due when its start slot has come, the leg it waits for has delivered, and its lane is free (a lane
carries one product at a time). Within a lane, legs go in plan order: a lane never skips ahead of a leg
that is due, so the order the planner chose for deadlines is kept."""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass

from topology.tpc_streams import streams_per_file

from .types import Leg, Plan


@dataclass(frozen=True)
class JobHints:
    """What a transfer job for one leg should ask of the transfertool.

    ``streams`` is what the lane runs in all (each of its ``concurrent_files`` copies with
    ``streams_per_file``, FTS3's per-copy ``nostreams``): the plan's streams rounded up so that every file
    has its share, and capped at what every third-party-copy scheme honours per file."""

    priority: int
    streams: int
    concurrent_files: int
    max_rate_bps: float
    activity: str
    streams_per_file: int = 1


def due_legs(
    plan: Plan,
    *,
    now_s: float,
    slot_seconds: float,
    done: Collection[int],
    busy_lanes: Collection[tuple[str, str]],
    skip: Collection[int] = (),
) -> list[int]:
    """Indexes (into ``plan.legs``) of the legs to submit now, at most one per free lane.

    ``done``: indexes of legs that have delivered; ``busy_lanes``: lanes with a transfer in flight;
    ``skip``: legs the caller carries some other way (the push loop sends a forward leg with its relay
    leg, and a second copy in a later plan once its first copy is there): they neither go nor hold their
    lane."""
    slot = int(now_s // slot_seconds)
    seen: set[tuple[str, str]] = set()
    due = []
    for index, leg in enumerate(plan.legs):
        lane = (leg.source, leg.destination)
        if index in done or index in skip or lane in seen:
            continue
        seen.add(lane)  # the lane's first unfinished leg decides for the lane
        if lane in busy_lanes or not math.isfinite(leg.start_s) or leg.start_slot > slot:
            continue
        if leg.depends_on is not None and leg.depends_on not in done:
            continue
        due.append(index)
    return due


def job_hints(leg: Leg) -> JobHints:
    """Priority, streams, concurrent files and pacing for the job that carries ``leg``.

    The plan's streams are the lane's (tuning.py); FTS3's ``nostreams`` is per copy, so each of the
    ``files`` copies at once gets its share."""
    files = max(1, leg.files)
    per_file = streams_per_file(leg.streams, files)
    return JobHints(
        priority=leg.priority,
        streams=per_file * files,
        concurrent_files=files,
        max_rate_bps=leg.rate_bps,
        activity=f"SKA push ({leg.role.value})",
        streams_per_file=per_file,
    )
