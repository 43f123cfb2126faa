"""Which legs of a plan to hand to the transfertool now (pure): the bridge from a plan to the push loop.

A leg is due when its start slot has come, the leg it waits for has delivered, and its lane has room: a lane
carries up to ``depth`` products at once (the push loop's ``SRCNET_LANE_DEPTH``), so that the next
product's files wait at the transfer service behind the current one's and take each file slot the moment
it frees, instead of the lane idling until a cycle notices the product ended. Within a lane, legs go in
plan order: a lane never skips ahead of a leg that is due, so the order the planner chose is kept."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from topology.tpc_streams import streams_per_file

from .types import Leg, Plan


@dataclass(frozen=True)
class JobHints:
    """What a transfer job for one leg should ask of the transfertool.

    ``lane_files`` is the copies the lane keeps in flight (its link limit at the transfer service), of
    which this job's files are ``concurrent_files``; each copy gets ``streams_per_file`` (FTS3's per-copy
    ``nostreams``): the lane's planned streams shared by its copies, rounded up so that every copy has its
    share, and capped at what every third-party-copy scheme honours per file. ``streams`` is this job's
    part of them."""

    priority: int
    streams: int
    concurrent_files: int
    max_rate_bps: float
    activity: str
    streams_per_file: int = 1
    lane_files: int = 1

    @property
    def copy_rate_bps(self) -> float:
        """One copy's share of the lane's planned rate: what a paced copy asks of its source
        (``SRCNET_PACE_COPIES``)."""
        return self.max_rate_bps / max(1, self.lane_files)


def due_legs(
    plan: Plan,
    *,
    now_s: float,
    slot_seconds: float,
    done: Collection[int],
    busy_lanes: Collection[tuple[str, str]],
    skip: Collection[int] = (),
    room: Mapping[tuple[str, str], int] | None = None,
    default_room: int = 1,
) -> list[int]:
    """Indexes (into ``plan.legs``) of the legs to submit now: on each lane with room, its first unfinished
    leg if that one is due, then the legs after it in plan order while there is room (each waits at the
    transfer service behind the one before it, so their slots need not have come yet).

    ``done``: indexes of legs that have delivered; ``busy_lanes``: lanes with no room; ``room``: how many
    more products each lane may take (``default_room`` for a lane not in it); ``skip``: legs the caller
    carries some other way (the push loop sends a forward leg with its relay leg, and a second copy in a
    later plan once its first copy is there): they neither go nor hold their lane."""
    slot = int(now_s // slot_seconds)
    left: dict[tuple[str, str], int] = {}
    due = []
    for index, leg in enumerate(plan.legs):
        lane = (leg.source, leg.destination)
        if index in done or index in skip:
            continue
        if lane not in left:  # the lane's first unfinished leg decides whether the lane moves now
            left[lane] = 0 if lane in busy_lanes else (room or {}).get(lane, default_room)
            if not math.isfinite(leg.start_s) or leg.start_slot > slot:
                left[lane] = 0
        if left[lane] <= 0 or not math.isfinite(leg.start_s):
            left[lane] = 0
            continue
        if leg.depends_on is not None and leg.depends_on not in done:
            left[lane] = 0  # keep plan order: nothing on this lane overtakes a leg that waits
            continue
        due.append(index)
        left[lane] -= 1
    return due


def job_hints(leg: Leg) -> JobHints:
    """Priority, streams, concurrent files and pacing for the job that carries ``leg``.

    The plan's streams are the lane's (tuning.py); FTS3's ``nostreams`` is per copy, so each of the
    ``files`` copies at once gets its share."""
    files = max(1, leg.files)
    per_file = streams_per_file(leg.streams, leg.lane_copies)
    return JobHints(
        priority=leg.priority,
        streams=per_file * files,
        concurrent_files=files,
        max_rate_bps=leg.rate_bps,
        activity=f"SKA push ({leg.role.value})",
        streams_per_file=per_file,
        lane_files=leg.lane_copies,
    )
