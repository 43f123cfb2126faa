"""When each product waiting at an SDP will arrive at its first copy's SRC, by the current plan, and why
not sooner: recorded on the product every push cycle (``DataProduct.predicted_arrival``, ``arrival_note``),
shown to scientists in the API, the CLI and the portal.

The plan's times count from the cycle's start: a leg due now finishes at ``finish_s``; a leg that waits
starts at ``start_s``, once the legs ahead of it on its lane (in the planner's order of priority and
deadline) have gone, and the lane has room (``SRCNET_LANE_DEPTH`` products at once). A product relayed
through a distribution centre arrives with its forward leg. Once its first copy is in flight, each cycle
predicts it again from the lane's copies in flight (``in_flight_predictions``); the prediction made as the
copy was submitted is kept apart (``submitted_prediction``), to be compared with the arrival.

The plan's rate is a share, not what the lane delivers: its copies are not paced, each starts cold, and
what is already in flight on the lane is not in the plan. So where the lane has delivered recently, a
direct copy's arrival is the lane's queue drained at its measured rate: the bytes still to copy in its
jobs in flight, then the bytes of the legs ahead of it in the plan's order, then its own
(``lane_rates``, ``lane_backlog_bytes``; measured against arrivals in docs/benchmarks.md)."""

from __future__ import annotations

import bisect
import datetime as dt
import math
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from django.conf import settings
from django.db.models import F, Q, Sum

from replicas.choices import ProductState, ReplicaState
from replicas.models import CopyRequest, DataProduct, ProductFile, Replica
from srcnet.bulk_rows import update_rows
from srcnet.intervals import covered_seconds
from topology.choices import StorageRole
from topology.models import NetworkPath, StorageEndpoint
from topology.physics import tcp_ceiling_bps
from transfers.choices import FileState
from transfers.models import TransferFile

from .lane_load import Lane, LaneLoad
from .models import PathMeasurement, PlannedRule
from .planning.types import Leg, LegRole

FIRST_COPY = (LegRole.PRIMARY, LegRole.FORWARD)


def predictions(
    legs: Iterable[Leg],
    due: Iterable[int],
    load: LaneLoad,
    *,
    rates: Mapping[Lane, float] | None = None,
    backlog: Mapping[Lane, float] | None = None,
) -> dict[str, tuple[float, str]]:
    """Product id -> (seconds from now to its arrival at its SRC, why then), for every product the plan
    carries to an SRC; ``due``: the indices of the legs this cycle submits; ``rates``: what each lane
    delivered lately (bit/s), ``backlog``: the bytes still to copy on each lane's jobs in flight."""
    legs = list(legs)
    due = set(due)
    rates, backlog = rates or {}, backlog or {}
    queued = _bytes_ahead(legs, backlog)
    # Start times on each lane, sorted: how many legs start before a given one is a bisection.
    starts: dict[tuple[str, str], list[float]] = {}
    for other in legs:
        starts.setdefault((other.source, other.destination), []).append(other.start_s)
    for times in starts.values():
        times.sort()
    out: dict[str, tuple[float, str]] = {}
    for index, leg in enumerate(legs):
        if leg.role not in FIRST_COPY:
            continue
        relayed = leg.role == LegRole.FORWARD and leg.depends_on is not None
        start_index = leg.depends_on if relayed and leg.depends_on is not None else index
        start = legs[start_index]
        lane = (start.source, start.destination)
        how = (
            f"{leg.streams} stream(s) x {leg.files} file(s), {leg.lane_copies} copies at once on the lane, "
            f"{leg.rate_bps / 1e6:.0f} Mbit/s planned"
        )
        if start_index in due:
            why = f"moving on {lane[0]} -> {lane[1]} since this cycle: {how}"
        else:
            ahead = bisect.bisect_left(starts[lane], start.start_s)
            room = max(0, load.depth_of(lane) - load.counts[lane])  # before this cycle's submissions
            reason = (
                f"the lane carries {load.depth_of(lane)} product(s) at once"
                if ahead >= room
                else "the access link and the lanes' shares"
            )
            why = (
                f"waits {start.start_s:.0f} s for {lane[0]} -> {lane[1]} ({ahead} product(s) ahead on it; "
                f"{reason}), then {how}"
            )
        arrival = leg.finish_s
        measured = rates.get(lane, 0.0)
        if not relayed and measured > 0 and index in queued:
            arrival = queued[index] * 8 / measured
            why += (
                f"; the lane delivers {measured / 1e6:.0f} Mbit/s lately, "
                f"{queued[index] / 1e6:.0f} MB to go on it up to this product"
            )
        if leg.role == LegRole.FORWARD:
            why += f"; relayed through {leg.source}"
        if leg.product_id not in out or arrival > out[leg.product_id][0]:
            out[leg.product_id] = (arrival, why)
    return out


def _bytes_ahead(legs: list[Leg], backlog: Mapping[Lane, float]) -> dict[int, float]:
    """Leg index -> the bytes its lane copies before the leg has arrived: the jobs in flight, the legs
    before it in the plan's order (its start time, then the planner's order), and the leg itself."""
    on_lane: dict[Lane, list[int]] = {}
    for index, leg in enumerate(legs):
        if math.isfinite(leg.start_s):
            on_lane.setdefault((leg.source, leg.destination), []).append(index)
    out: dict[int, float] = {}
    for lane, indices in on_lane.items():
        total = backlog.get(lane, 0.0)
        for index in sorted(indices, key=lambda i: (legs[i].start_s, i)):
            total += legs[index].size_bytes
            out[index] = total
    return out


# What a lane delivered lately: its last jobs, within the last half hour (an older regime says little).
RATE_JOBS = 10
RATE_WINDOW = dt.timedelta(minutes=30)


def lane_rates(now: dt.datetime) -> dict[Lane, float]:
    """Lane -> bit/s delivered while it carried something: the bytes of its last finished push jobs over
    the union of their spans (jobs in flight together count once; idle time between them does not)."""
    spans: dict[Lane, list[tuple[float, float, int]]] = {}
    rows = PathMeasurement.objects.filter(succeeded=True, created__gte=now - RATE_WINDOW).values_list(
        "source", "destination", "created", "seconds", "bytes"
    )
    for source, destination, created, seconds, size in rows:  # newest first (the model's ordering)
        lane = (source, destination)
        if len(spans.setdefault(lane, [])) < RATE_JOBS:
            end = created.timestamp()
            spans[lane].append((end - seconds, end, size))
    rates = {}
    for lane, jobs in spans.items():
        busy = covered_seconds((start, end) for start, end, _ in jobs)
        if busy > 0:
            rates[lane] = sum(size for _, _, size in jobs) * 8 / busy
    return rates


@dataclass(frozen=True)
class CopyInFlight:
    """A first copy going straight to its SRC, and the bytes it still has to copy (by estimate)."""

    replica_id: int
    product_id: int
    lane: Lane
    submitted: dt.datetime
    left: float
    # Seconds until its slowest active file ends at the pace its progress shows (None: no pace known).
    own_pace_s: float | None = None
    files: tuple[FileCopy, ...] = ()  # its files as the transfer service reports them (none: not reported)


def copies_in_flight(now: dt.datetime, rates: Mapping[Lane, float]) -> list[CopyInFlight]:
    """The first copies in flight going straight to their SRC and the bytes each still has to copy, from the
    platform's own replicas, whichever transfer service carries them; in the order they were submitted.

    Where the transfer service reports the copy's files (its job carries the replica's id), a finished
    file has nothing left, a file not started yet all of its bytes, and an active one its bytes less what
    it has sent: the bytes last seen at its destination (the service's progress) and its share of the
    lane's measured rate (the rate over the lane's active files) since then, or since it started where no
    progress was seen yet. A job can wait at the service for a copy slot, and counting from its
    submission would call bytes sent that have not left. Elsewhere (a Rucio rule, a job with no files
    reported yet) the product has had its share of the lane since its copy was submitted (none where the
    lane has no measurement, so its whole size)."""
    rows = list(
        Replica.objects.filter(state=ReplicaState.COPYING, upstream__isnull=True, via__isnull=True)
        .exclude(endpoint__role=StorageRole.SDP)
        .values_list("pk", "product_id", "product__telescope__name", "endpoint__site__name", "created")
        .annotate(total=Sum("product__files__size_bytes"))
        .order_by("created", "pk")
    )
    lane_of = {pk: (telescope, site) for pk, _, telescope, site, _, _ in rows}
    files = _copy_files(list(lane_of))
    active = Counter(
        lane_of[pk]
        for pk, copies in files.items()
        for copy in copies
        if copy.state == FileState.ACTIVE and copy.started is not None
    )
    in_flight = Counter(lane for pk, lane in lane_of.items() if pk not in files)
    out: list[CopyInFlight] = []
    for pk, product_id, telescope, site, created, total in rows:
        lane = (telescope, site)
        rate = rates.get(lane, 0.0)
        paces: list[float] = []
        if pk in files:
            share = rate / 8 / max(1, active[lane])
            left = sum(max(0.0, copy.size - copy.sent(now, share)) for copy in files[pk])
            paces = [p for p in (copy.seconds_to_end(now) for copy in files[pk]) if p is not None]
        else:
            sent = max(0.0, (now - created).total_seconds()) * rate / 8 / in_flight[lane]
            left = max(0.0, float(total or 0) - sent)
        reported = tuple(files.get(pk, ()))
        out.append(CopyInFlight(pk, product_id, lane, created, left, max(paces) if paces else None, reported))
    return out


def lane_backlog_bytes(now: dt.datetime, rates: Mapping[Lane, float]) -> dict[Lane, float]:
    """Lane -> bytes still to copy of the products in flight on it (first copies going straight to their
    SRC; ``copies_in_flight``)."""
    return bytes_left_by_lane(copies_in_flight(now, rates))


def bytes_left_by_lane(copies: Iterable[CopyInFlight]) -> dict[Lane, float]:
    out: dict[Lane, float] = {}
    for copy in copies:
        out[copy.lane] = out.get(copy.lane, 0.0) + copy.left
    return out


def in_flight_predictions(
    copies: Iterable[CopyInFlight], rates: Mapping[Lane, float]
) -> dict[int, tuple[float, str]]:
    """Product id -> (seconds from now to its arrival, why then), for every product whose first copy is in
    flight on a lane with a measured rate: the lane's copies drain in the order they were submitted, at
    the lane's recent rate, so a copy arrives once the bytes of those before it and its own have gone;
    and not before its slowest file ends at the pace that file keeps (``FileCopy.seconds_to_end``).
    A lane with no measurement yet keeps the prediction made when its copies were submitted."""
    before: dict[Lane, tuple[float, int]] = {}
    out: dict[int, tuple[float, str]] = {}
    for copy in copies:  # in the order they were submitted
        rate = rates.get(copy.lane, 0.0)
        queued, ahead = before.get(copy.lane, (0.0, 0))
        before[copy.lane] = (queued + copy.left, ahead + 1)
        if rate <= 0:
            continue
        seconds = (queued + copy.left) * 8 / rate
        why = (
            f"moving on {copy.lane[0]} -> {copy.lane[1]} since {copy.submitted:%H:%M:%S}: "
            f"{(queued + copy.left) / 1e6:.0f} MB to go on the lane up to it ({ahead} copy(ies) ahead), "
            f"the lane delivers {rate / 1e6:.0f} Mbit/s lately"
        )
        if copy.own_pace_s is not None and copy.own_pace_s > seconds:
            seconds = copy.own_pace_s
            why += f"; its slowest file, at the pace it keeps, ends in {copy.own_pace_s:.0f} s"
        if copy.product_id not in out or seconds > out[copy.product_id][0]:
            out[copy.product_id] = (seconds, why)
    return out


@dataclass(frozen=True)
class FileCopy:
    """A file of a copy as the transfer service reports it."""

    size: float
    state: str
    started: dt.datetime | None
    transferred: float = 0.0
    progress_at: dt.datetime | None = None
    pace_bps: float | None = None  # bytes/s over its last looks at the destination
    finished: dt.datetime | None = None

    def sent(self, now: dt.datetime, share_bps: float) -> float:
        """Bytes sent by ``now``: all of a finished file, none of one not started, and for an active one
        its progress last seen (or nothing at its start) plus ``share_bps`` (bytes/s) since then."""
        if self.state == FileState.FINISHED:
            return self.size
        if self.state != FileState.ACTIVE or self.started is None:
            return 0.0
        seen, since = (self.transferred, self.progress_at) if self.progress_at else (0.0, self.started)
        return seen + max(0.0, (now - since).total_seconds()) * share_bps

    def seconds_to_end(self, now: dt.datetime) -> float | None:
        """For an active file whose recent pace the transfer service has seen (``progress_bps``: its looks
        at the destination over the last seconds): how long until it ends at that pace. One TCP
        connection on a long path can stay far below its share of the lane for a long time (a loss early
        in slow start), and its product waits for it."""
        if self.state != FileState.ACTIVE or self.progress_at is None or not self.pace_bps:
            return None
        since = max(0.0, (now - self.progress_at).total_seconds())
        return max(0.0, (self.size - self.transferred - self.pace_bps * since) / self.pace_bps)


def _copy_files(replica_ids: list[int]) -> dict[int, list[FileCopy]]:
    """Replica id -> each file of the job of its latest copy request, where the platform's transfer service
    holds that job (its own, or one the loop follows at the service's FTS3 endpoint). The request is the push
    loop's own link to the job: a client's job naming the replica in its metadata does not count."""
    if not replica_ids:
        return {}
    latest: dict[int, str] = {}
    for replica_id, job_id in (
        CopyRequest.objects.filter(replica_id__in=replica_ids)
        .order_by("replica_id", "submitted", "id")
        .values_list("replica_id", "job_id")
    ):
        latest[replica_id] = job_id  # ordered: the last one seen is the latest
    replica_of = {key: replica for replica, job_id in latest.items() if (key := _service_job_id(job_id))}
    found: dict[int, list[FileCopy]] = {}
    rows = TransferFile.objects.filter(job__job_id__in=list(replica_of)).values_list(
        "job__job_id",
        "filesize",
        "state",
        "start_time",
        "transferred_bytes",
        "progress_at",
        "progress_bps",
        "finish_time",
    )
    for job_uuid, size, state, started, transferred, progress_at, pace, ended in rows:
        if state == FileState.NOT_USED:
            continue
        copy = FileCopy(float(size or 0), state, started, float(transferred or 0), progress_at, pace, ended)
        found.setdefault(replica_of[str(job_uuid)], []).append(copy)
    return found


def _service_job_id(job_id: str) -> str:
    """``job_id`` as the platform's service writes its job ids (UUIDs), or empty if it cannot be one of them
    (another FTS3's need not be a UUID)."""
    try:
        return str(uuid.UUID(job_id))
    except ValueError:
        return ""


def record(found: dict[str, tuple[float, str]], now: dt.datetime) -> int:
    """Write each product's (by DID) predicted arrival and its reason; returns how many were updated."""
    if not found:
        return 0
    products = list(DataProduct.objects.filter(_named(found)).only("pk", "scope", "name", *PREDICTION))
    return _write(products, {product.pk: found[product.did] for product in products}, now)


def record_in_flight(found: dict[int, tuple[float, str]], now: dt.datetime) -> int:
    """Write each product's (by id) predicted arrival and its reason; returns how many were updated. One that
    arrived or failed since the cycle read what is in flight keeps what it had then."""
    moving = (ProductState.REGISTERED, ProductState.PLACING)
    products = list(DataProduct.objects.filter(pk__in=list(found), state__in=moving).only("pk", *PREDICTION))
    return _write(products, found, now)


NO_ROOM = "no arrival time: the plan has no room for it on any lane now"
BEYOND_HORIZON = (
    "no arrival time yet: it waits beyond the push cycle's horizon (each cycle plans the first "
    "SRCNET_PLAN_HORIZON_PRODUCTS products of a telescope's queue, in the planner's order)"
)


def forget_beyond_horizon(planned: Iterable[str]) -> int:
    """Products still at the SDP that this cycle does not plan (beyond its horizon; ``planned``: the DIDs it
    does) keep no prediction an earlier cycle made: a product pushed back by others of higher priority says
    so. Only rows that still have one are written; returns how many."""
    keep = _named(planned)
    # A product never planned (registered beyond the horizon) has neither, and is not written at all.
    predicted = Q(predicted_arrival__isnull=False) | ~Q(arrival_note__in=["", BEYOND_HORIZON])
    stale = DataProduct.objects.filter(predicted, state=ProductState.REGISTERED)
    beyond = stale.exclude(keep) if keep else stale
    return beyond.update(predicted_arrival=None, arrival_note=BEYOND_HORIZON)


PREDICTION = ("predicted_arrival", "arrival_note")
# A prediction that moved less than this, for the same reason, is not written again: every push cycle predicts
# every planned product (a thousand cycles in a backlog's hour), and most stay where they were.
UNCHANGED = dt.timedelta(seconds=1)


def _write(products: list[DataProduct], found: Mapping[int, tuple[float, str]], now: dt.datetime) -> int:
    """Set each of ``products`` (their predictions loaded) to what ``found`` says, and write those that
    changed (in one statement); returns how many were written."""
    changed = []
    for product in products:
        seconds, why = found[product.pk]
        arrival: dt.datetime | None = None
        if math.isfinite(seconds):
            arrival = now + dt.timedelta(seconds=max(0.0, seconds))
        else:
            # A leg the planner could not place (its lanes full or down) ends at infinity: no time to show,
            # and none to keep as the submitted prediction.
            why = f"{NO_ROOM}; {why}"
        why = why[:300]
        before = product.predicted_arrival
        same_time = (arrival is None and before is None) or (
            arrival is not None and before is not None and abs(arrival - before) < UNCHANGED
        )
        if same_time and why == product.arrival_note:
            continue
        product.predicted_arrival, product.arrival_note = arrival, why
        changed.append(product)
    update_rows(DataProduct, changed, PREDICTION)
    return len(changed)


def keep_submitted(dids: Iterable[str]) -> int:
    """Keep, on each product whose first copy was just submitted, the arrival predicted then
    (``submitted_prediction``): the prediction goes on changing with the lane while the copy runs, and the
    one made at submission is what docs/benchmarks.md measures against the arrival."""
    wanted = _named(dids)
    if not wanted:
        return 0
    return DataProduct.objects.filter(
        wanted, submitted_prediction__isnull=True, predicted_arrival__isnull=False
    ).update(submitted_prediction=F("predicted_arrival"))


def _named(dids: Iterable[str]) -> Q:
    """The products with these DIDs (``scope:name``); an empty Q for none. One ``name IN (...)`` per scope:
    an OR of one (scope, name) pair per product made PostgreSQL test every pair on every row, minutes for a
    push cycle with 10 000 products queued (bench/scheduler/push_cycle.py)."""
    by_scope: dict[str, set[str]] = {}
    for did in set(dids):
        scope, _, name = did.partition(":")
        by_scope.setdefault(scope, set()).add(name)
    wanted = Q()
    for scope, names in sorted(by_scope.items()):
        wanted |= Q(scope=scope, name__in=sorted(names))
    return wanted


# Copies other than a product's first: a second copy made SRC -> SRC (``Replica.upstream``) and a copy
# Rucio's conveyor makes for a Rucio rule. Predicted when asked (the Rules page, a product's page, the rules
# API), from the same figures the cycle uses: each lane's measured rate (``lane_rates``) and its queue.


@dataclass(frozen=True)
class CopyArrival:
    """When a copy is predicted to arrive, and why not sooner."""

    at: dt.datetime | None
    note: str


IN_FLIGHT_FILES = (FileState.SUBMITTED, FileState.ACTIVE)
WINDOW_BYTES = 2**30  # the per-flow TCP ceiling's window where a lane has no measurement (topology.physics)


def copy_arrivals(replicas: Iterable[Replica], now: dt.datetime | None = None) -> dict[int, CopyArrival]:
    """Replica id -> its predicted arrival, for every copy still planned or copying: a first copy by the
    push loop's prediction on its product (``predicted_arrival``); a second copy by its upstream's arrival
    and its lane's queue drained at the lane's measured rate; a Rucio rule's copy by the plan of the rule
    (``PlannedRule``) or else by Rucio's jobs at the platform's FTS3 endpoint and their link's queue."""
    now = now or dt.datetime.now(dt.UTC)
    pending = [
        r
        for r in replicas
        if r.state in (ReplicaState.PLANNED, ReplicaState.COPYING) and r.endpoint.role != StorageRole.SDP
    ]
    if not pending:
        return {}
    rates = lane_rates(now)
    out: dict[int, CopyArrival] = {}
    for replica in sorted(pending, key=lambda r: (r.upstream_id is not None, r.pk)):
        if replica.rucio_rule:
            out[replica.pk] = _rucio_copy(replica, now, rates)
        elif replica.upstream_id is not None:
            out[replica.pk] = _second_copy(replica, now, rates, out)
        elif replica.product.predicted_arrival is not None:
            out[replica.pk] = CopyArrival(replica.product.predicted_arrival, replica.product.arrival_note)
        else:
            out[replica.pk] = CopyArrival(None, "first copy, not planned yet: the next push cycle plans it")
    return out


def _size(product_id: int) -> int:
    return int(ProductFile.objects.filter(product_id=product_id).aggregate(s=Sum("size_bytes"))["s"] or 0)


def _lane_rate(lane: Lane, rates: Mapping[Lane, float]) -> tuple[float, str]:
    """(bit/s, how it is known): measured lately, else the carrier path's per-flow TCP ceiling."""
    measured = rates.get(lane, 0.0)
    if measured > 0:
        return measured, f"the lane delivers {measured / 1e6:.0f} Mbit/s lately"
    path = (
        NetworkPath.objects.filter(source__name=lane[0], destination__name=lane[1])
        .order_by("-is_computed", "rtt_ms", "id")
        .first()
    )
    if path is None:
        return 0.0, f"no network path {lane[0]} -> {lane[1]}"
    # On a scaled-down network (the long-haul local network) the wire carries capacity / scale, as planned.
    capacity = float(path.capacity_bps) / settings.SRCNET_NETWORK_SCALE
    ceiling = min(tcp_ceiling_bps(WINDOW_BYTES, path.rtt_ms), capacity)
    return ceiling, (
        f"nothing measured on the lane in the last {RATE_WINDOW.seconds // 60} min: its path's per-flow "
        f"ceiling, {ceiling / 1e6:.0f} Mbit/s"
    )


def _second_copy(
    replica: Replica, now: dt.datetime, rates: Mapping[Lane, float], known: Mapping[int, CopyArrival]
) -> CopyArrival:
    upstream = replica.upstream
    assert upstream is not None
    lane = (upstream.endpoint.site.name, replica.endpoint.site.name)
    rate, how = _lane_rate(lane, rates)
    if rate <= 0:
        return CopyArrival(None, how)
    if upstream.state == ReplicaState.AVAILABLE:
        ready, waits = now, f"from {upstream.endpoint.name}"
    elif upstream.state == ReplicaState.FAILED:
        return CopyArrival(None, f"its upstream copy at {upstream.endpoint.name} failed")
    else:
        before = known.get(upstream.pk)
        if before is None or before.at is None:
            return CopyArrival(
                None, f"waits for {upstream.endpoint.name}, whose arrival is not predicted yet"
            )
        ready = max(now, before.at)
        waits = f"waits for {upstream.endpoint.name} (predicted {ready:%H:%M:%S})"
    # The lane's queue: the copies on it ahead of this one (in flight first, then planned, oldest first).
    ahead = list(
        Replica.objects.filter(
            state__in=(ReplicaState.PLANNED, ReplicaState.COPYING),
            upstream__endpoint__site__name=lane[0],
            endpoint__site__name=lane[1],
        )
        .exclude(pk=replica.pk)
        .annotate(total=Sum("product__files__size_bytes"))
        .values_list("pk", "state", "total", "updated")
    )
    mine = (replica.state != ReplicaState.COPYING, replica.pk)
    ahead = [row for row in ahead if (row[1] != ReplicaState.COPYING, row[0]) < mine]
    in_flight = max(1, sum(1 for row in ahead if row[1] == ReplicaState.COPYING))
    queued = 0.0
    for _, state, total, updated in ahead:
        size = float(total or 0)
        if state == ReplicaState.COPYING:
            size -= max(0.0, (now - updated).total_seconds()) * rate / 8 / in_flight
        queued += max(0.0, size)
    own = float(_size(replica.product_id))
    drained = now + dt.timedelta(seconds=queued * 8 / rate)
    at = max(ready, drained) + dt.timedelta(seconds=own * 8 / rate)
    note = (
        f"second copy {waits} on {lane[0]} -> {lane[1]}: {len(ahead)} copy(ies) ahead on the lane, "
        f"{(queued + own) / 1e6:.0f} MB to go up to this copy; {how}"
    )
    return CopyArrival(at, note)


def _rucio_copy(replica: Replica, now: dt.datetime, rates: Mapping[Lane, float]) -> CopyArrival:
    plan = (
        PlannedRule.objects.filter(product_id=replica.product_id, rse=replica.endpoint.name)
        .order_by("-created", "-id")
        .first()
    )
    if plan is not None and plan.predicted_arrival is not None:
        return CopyArrival(
            dt.datetime.fromtimestamp(plan.predicted_arrival, dt.UTC),
            f"Rucio rule {plan.rule_id} placed by the push plan on {plan.source_site} -> "
            f"{plan.destination_site}, {plan.streams} stream(s), {plan.planned_bps / 1e6:.0f} Mbit/s planned",
        )
    product = replica.product
    mine = list(
        TransferFile.objects.filter(
            state__in=IN_FLIGHT_FILES,
            metadata__scope=product.scope,
            metadata__name__startswith=f"{product.name}/",
            metadata__dst_rse=replica.endpoint.name,
        ).values_list("source_se", "dest_se", "job__created", "metadata__src_rse")
    )
    if not mine:
        return CopyArrival(None, "waits for Rucio's conveyor to submit its transfers to the FTS3 endpoint")
    source_se, dest_se = mine[0][0], mine[0][1]
    last_submitted = max(row[2] for row in mine)
    # The link's queue at the FTS3 endpoint: its files in flight submitted up to this copy's last one.
    ahead = TransferFile.objects.filter(
        state__in=IN_FLIGHT_FILES, source_se=source_se, dest_se=dest_se, job__created__lte=last_submitted
    ).values_list("filesize", "transferred_bytes")
    queued = sum(max(0, (size or 0) - (sent or 0)) for size, sent in ahead)
    others = len(ahead) - len(mine)
    source = StorageEndpoint.objects.filter(name=str(mine[0][3])).select_related("site").first()
    lane = (source.site.name if source else source_se, replica.endpoint.site.name)
    rate, how = _lane_rate(lane, rates)
    if rate <= 0:
        return CopyArrival(None, how)
    at = now + dt.timedelta(seconds=queued * 8 / rate)
    note = (
        f"Rucio's conveyor: {len(mine)} file(s) at the FTS3 endpoint on {lane[0]} -> {lane[1]}, "
        f"{others} file(s) of other jobs ahead on the link, {queued / 1e6:.0f} MB to go up to this copy; "
        f"{how}"
    )
    return CopyArrival(at, note)
