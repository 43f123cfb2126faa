"""Lane health: which lanes the push loop leaves out of its plans because they are broken now.

A lane (source site, destination site) is unavailable when

* a link of its path is down (``Link.is_up``; the snapshot gives it no capacity either), or
* its last ``FAILURES`` settled push copies failed on the way, for a network or destination reason (a
  source problem, a missing or mismatching file, says nothing of the lane and is skipped), and the last of
  them failed less than ``COOL_OFF_SECONDS`` ago.

It is available again after a copy on it succeeds, when its links are up, or once the cool-off has passed: the
next product the plan puts on it is the probe (if that fails too, the lane is out for another cool-off). The
history is the copy requests' outcomes (``replicas.CopyRequest``: its lane, how its job ended, whether its
source was to blame, when), so every worker and cycle sees the same health with nothing to keep in step. A
relayed copy's failure counts against both its hops: which one broke is not known. Settings:
``SRCNET_LANE_HEALTH``. The planner gets the unavailable lanes (``LiveState.unavailable_lanes``): their rate
is 0, so products go to other SRCs or through a relay whose legs are available, and the plan says so in an
event (``outage_events``)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from django.conf import settings
from django.utils import timezone

from replicas import lifecycle
from replicas.choices import ReplicaState
from replicas.lifecycle import REROUTED
from replicas.models import CopyRequest, DataProduct, Replica
from topology.models import Link
from transfers.choices import JobState

from .planning.types import Plan, PlanEvent, Product, Topology

Key = tuple[str, str]


@dataclass(frozen=True)
class Outage:
    """Why a lane is left out of the plans, and since when."""

    lane: Key
    reason: str
    since: dt.datetime | None = None
    until: dt.datetime | None = None  # the end of the cool-off: the next product on it then is the probe

    def detail(self) -> str:
        since = f" since {self.since:%H:%M:%S} UTC" if self.since else ""
        probe = f", probed again after {self.until:%H:%M:%S} UTC" if self.until else ""
        return f"lane {self.lane[0]} -> {self.lane[1]} unavailable{since} ({self.reason}{probe}): re-routing"


def _config() -> Mapping[str, float]:
    return {"FAILURES": 1, "COOL_OFF_SECONDS": 300.0, "WINDOW_SECONDS": 3600.0, **settings.SRCNET_LANE_HEALTH}


def unavailable_lanes(*, topology: Topology, now: dt.datetime | None = None) -> dict[Key, Outage]:
    """Every lane of ``topology``'s paths that is unavailable at ``now`` (default: now), with why."""
    now = now or timezone.now()
    out: dict[Key, Outage] = {}
    down = set(Link.objects.filter(is_up=False).values_list("name", flat=True))
    for path in topology.paths:
        cut = sorted(set(path.links) & down)
        if cut:
            key = (path.source, path.destination)
            out[key] = Outage(key, f"link {', '.join(cut)} down")
    config = _config()
    cool_off = dt.timedelta(seconds=float(config["COOL_OFF_SECONDS"]))
    for key, failures in _failing_lanes(now, int(config["FAILURES"]), float(config["WINDOW_SECONDS"])):
        last = failures[0]
        if key not in out and last.settled is not None and last.settled + cool_off > now:
            out[key] = Outage(key, _why(last), failures[-1].settled, last.settled + cool_off)
    return out


def _failing_lanes(now: dt.datetime, failures: int, window: float) -> Iterable[tuple[Key, list[CopyRequest]]]:
    """Lanes whose ``failures`` most recent settled push copies (within ``window`` seconds) all failed for
    no source problem, with those copies' requests, newest first."""
    settled = (
        CopyRequest.objects.filter(settled__gte=now - dt.timedelta(seconds=window))
        .exclude(source_problem=True)
        .exclude(state=JobState.CANCELED)  # stopped by an operator: says nothing of the lane
        .only("source_site", "destination_site", "via_site", "state", "reasons", "settled")
        .order_by("-settled", "-id")
    )
    history: dict[Key, list[CopyRequest]] = {}
    for request in settled:
        for key in request.lanes:
            history.setdefault(key, []).append(request)
    for key, rows in history.items():
        recent = rows[: max(1, failures)]
        if len(recent) == max(1, failures) and all(r.state != JobState.FINISHED for r in recent):
            yield key, recent


def _why(request: CopyRequest) -> str:
    tail = f"transfer job {request.job_id} {request.state}: {'; '.join(request.reasons)}"
    return tail if len(tail) <= 200 else tail[:197] + "..."


def unpin_broken(products: list[Product], outages: Mapping[Key, Outage]) -> list[Product]:
    """Products pinned to a lane that is unavailable fall back to their telescope's policy (their pinned
    replica is then released when the product goes elsewhere: ``release_pin``)."""
    return [
        replace(p, destination=None) if p.destination and (p.telescope, p.destination) in outages else p
        for p in products
    ]


def pinned_copy(product: DataProduct, final: str) -> Replica | None:
    """The product's pinned first copy (locked), if it still holds: a pin at another site than ``final``,
    where the plan sent the product because the pinned lane was unavailable (``unpin_broken``), is kept as
    FAILED history (``rerouted``) saying why, and there is no pin."""
    pin = (
        product.replicas.select_for_update(of=("self",))
        .filter(state=ReplicaState.PLANNED, upstream__isnull=True)
        .select_related("endpoint__site")
        .first()
    )
    if pin is None or pin.endpoint.site.name == final:
        return pin
    lane = (product.telescope.name, pin.endpoint.site.name)
    lifecycle.keep_as_reroute_history(
        pin,
        f"{pin.reason}; {REROUTED} not copied: lane {lane[0]} -> {lane[1]} unavailable, "
        f"placed by the telescope's policy at {final} instead",
    )
    return None


def with_outage_events(plan: Plan, outages: Mapping[Key, Outage], telescope: str) -> Plan:
    """The plan with one event per unavailable lane it has (its rate was 0: nothing went on it)."""
    keys = {lane.key for lane in plan.lanes}
    events = [
        PlanEvent(0.0, telescope, "reroute", outage.detail())
        for key, outage in sorted(outages.items())
        if key in keys
    ]
    return replace(plan, events=(*events, *plan.events))
