"""Reads behind the state metrics: what the database says now, computed at scrape time.

Every figure here comes from the shared database, so any web server process answers a scrape with the
same values (no per-process state; docs/monitoring.md, "Where each metric comes from")."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Case, CharField, Count, Max, Min, Q, Sum, Value, When
from django.utils import timezone

from replicas.choices import ProductState
from replicas.models import CopyRequest, DataProduct
from schedulers.models import PushCycle
from topology.choices import LinkKind, SiteKind
from topology.models import Link, StorageEndpoint, Telescope
from topology.services.storage_urls import storage_elements
from transfers.choices import FileState, JobState
from transfers.models import TransferFile

from .models import FireflyCursor, FlowTraffic

# Products at an SDP that still occupy its buffer: not yet handed on, or on their way.
AT_SDP = (ProductState.REGISTERED, ProductState.PLACING)


@dataclass(frozen=True)
class AccessLink:
    """A telescope's access link and the rate the telescope's daily volume needs."""

    telescope: str
    link: str
    capacity_bps: float
    target_bps: float


def access_links() -> list[AccessLink]:
    """Each telescope's access link, in the units of the wire the platform drives: on a scaled-down
    network (``SRCNET_NETWORK_SCALE``, the long-haul local one) capacity and target are divided as the push
    loop's plan is, so planned, achieved and target compare."""
    scale = settings.SRCNET_NETWORK_SCALE
    links = Link.objects.filter(kind=LinkKind.ACCESS).filter(
        Q(a_end__kind=SiteKind.TELESCOPE) | Q(b_end__kind=SiteKind.TELESCOPE)
    )
    telescopes = {t.pk: t for t in Telescope.objects.all()}
    out = []
    for link in links.order_by("name"):
        telescope = telescopes.get(link.a_end_id) or telescopes.get(link.b_end_id)
        if telescope is None:
            continue
        out.append(
            AccessLink(
                telescope.name,
                link.name,
                capacity_bps=float(link.capacity_bps) / scale,
                target_bps=telescope.sustained_rate_bps / scale,
            )
        )
    return out


def element_site_names() -> dict[str, str]:
    """Storage element (``scheme://host:port``) -> the name of the site its endpoint belongs to."""
    out: dict[str, str] = {}
    for endpoint in StorageEndpoint.objects.select_related("site"):
        for element in storage_elements(endpoint):
            out.setdefault(element, endpoint.site.name)
    return out


def achieved_bps_from_sites(window_seconds: float, *, now: datetime | None = None) -> dict[str, float]:
    """Bits per second that left each site over the last ``window_seconds``: the bytes of the copies from
    its storage that finished in the window, over the window."""
    since = (now or timezone.now()) - timedelta(seconds=window_seconds)
    sites = element_site_names()
    rows = (
        TransferFile.objects.filter(state=FileState.FINISHED, finish_time__gte=since)
        .values("source_se")
        .annotate(bytes=Sum("transferred_bytes"))
        .order_by()
    )
    out: dict[str, float] = defaultdict(float)
    for row in rows:
        site = sites.get(row["source_se"])
        if site is not None:
            out[site] += (row["bytes"] or 0) * 8 / window_seconds
    return dict(out)


@dataclass
class LaneInFlight:
    """The push jobs in flight on one lane (source site -> destination site) and what the plan gave them."""

    jobs: int = 0
    streams: int = 0
    planned_bps: float = 0.0


def _push_jobs(requests: Any) -> list[dict[str, Any]]:
    """One row per transfer job among copy requests' ``requests`` (a job carrying several replicas' copies
    has a request for each, with the same plan): the first request's."""
    jobs: dict[tuple[str, str], dict[str, Any]] = {}
    for row in requests.order_by("endpoint", "job_id", "pk"):
        jobs.setdefault((row["endpoint"], row["job_id"]), row)
    return list(jobs.values())


def lanes_in_flight() -> dict[tuple[str, str], LaneInFlight]:
    """The push jobs not yet ended, by lane, with what the plan gave them: the push loop's copy requests
    not yet settled (its jobs at the platform's own service and at any FTS3 it submits to, each once), and
    its Rucio rules with a job in flight, by the lane of their plan (``rule_plans``). The push loop's own
    record, never a job's metadata, which any client of the FTS3 endpoint writes as it likes."""
    from .rule_plans import rules_in_flight

    out: dict[tuple[str, str], LaneInFlight] = defaultdict(LaneInFlight)
    for rule in rules_in_flight():
        entry = out[(rule.plan.source_site, rule.plan.destination_site)]
        entry.jobs += 1
        entry.streams += rule.plan.streams
        entry.planned_bps += rule.plan.planned_bps
    open_requests = CopyRequest.objects.filter(settled__isnull=True).values(
        "endpoint", "job_id", "source_site", "destination_site", "streams", "planned_bps"
    )
    for job in _push_jobs(open_requests):
        entry = out[(job["source_site"], job["destination_site"])]
        entry.jobs += 1
        entry.streams += job["streams"]
        entry.planned_bps += job["planned_bps"] or 0.0
    return dict(out)


def planned_bps_from_sites(lanes: dict[tuple[str, str], LaneInFlight]) -> dict[str, float]:
    """The plan's rates of the push jobs in flight, summed by the site they leave (a telescope's is its
    access link's planned rate). Jobs without a planned rate count for nothing."""
    out: dict[str, float] = defaultdict(float)
    for (source, _), lane in lanes.items():
        out[source] += lane.planned_bps
    return dict(out)


@dataclass(frozen=True)
class ArrivalDelays:
    """How much later than the plan predicted the push jobs that finished recently arrived."""

    jobs: int
    mean_seconds: float
    max_seconds: float


def arrival_delays(
    window_seconds: float, *, now: datetime | None = None
) -> dict[tuple[str, str], ArrivalDelays]:
    """Per lane, over the push jobs that finished in the last ``window_seconds`` with a predicted arrival:
    when the job's end reached the platform (its copy request settled: the embedded service's signal at the
    job's end, an external FTS3's poll within its interval) minus the predicted arrival (negative: earlier
    than planned). A push-loop Rucio rule counts once its last file's job finished (``rule_plans``)."""
    since = (now or timezone.now()) - timedelta(seconds=window_seconds)
    delays: dict[tuple[str, str], list[float]] = defaultdict(list)
    from .rule_plans import rule_arrivals

    for arrival in rule_arrivals(since):
        if arrival.plan.predicted_arrival is not None:
            rule_lane = (arrival.plan.source_site, arrival.plan.destination_site)
            delays[rule_lane].append(arrival.finished.timestamp() - arrival.plan.predicted_arrival)
    finished = CopyRequest.objects.filter(
        state=JobState.FINISHED, settled__gte=since, predicted_arrival__isnull=False
    ).values("endpoint", "job_id", "source_site", "destination_site", "predicted_arrival", "settled")
    for job in _push_jobs(finished):
        delay = (job["settled"] - job["predicted_arrival"]).total_seconds()
        delays[(job["source_site"], job["destination_site"])].append(delay)
    return {lane: ArrivalDelays(len(d), sum(d) / len(d), max(d)) for lane, d in delays.items()}


@dataclass(frozen=True)
class SdpQueue:
    """What one telescope's SDP holds: products waiting to be handed on, and what occupies its buffer."""

    waiting: int
    waiting_bytes: int
    held_bytes: int
    buffer_bytes: int
    earliest_deadline: datetime | None


def sdp_queues() -> dict[str, SdpQueue]:
    # Sizes per product first: summing files over a join with other aggregates would multiply them.
    sizes = dict(
        DataProduct.objects.filter(state__in=AT_SDP)
        .values("pk")
        .annotate(total=Sum("files__size_bytes"))
        .values_list("pk", "total")
    )
    per: dict[str, dict[str, Any]] = {}
    for site in Telescope.objects.all():
        per[site.name] = {
            "waiting": 0,
            "waiting_bytes": 0,
            "held": 0,
            # On a scaled-down network its products are scaled down too: so is the buffer they fill.
            "buffer": site.sdp_buffer_bytes / settings.SRCNET_NETWORK_SCALE,
        }
    rows = DataProduct.objects.filter(state__in=AT_SDP).values_list("pk", "telescope__name", "state")
    for pk, telescope, state in rows:
        size = int(sizes.get(pk) or 0)
        entry = per[telescope]
        entry["held"] += size
        if state == ProductState.REGISTERED:
            entry["waiting"] += 1
            entry["waiting_bytes"] += size
    deadlines = dict(
        DataProduct.objects.filter(state__in=AT_SDP, deadline__isnull=False)
        .values("telescope__name")
        .annotate(first=Min("deadline"))
        .values_list("telescope__name", "first")
    )
    return {
        name: SdpQueue(e["waiting"], e["waiting_bytes"], e["held"], e["buffer"], deadlines.get(name))
        for name, e in per.items()
    }


def transfers_by_state() -> list[tuple[str, str, int]]:
    """(state, activity, files) over every transfer file the service holds."""
    rows = TransferFile.objects.values("state", "activity").annotate(files=Count("id")).order_by()
    return [(r["state"], r["activity"], r["files"]) for r in rows]


@dataclass(frozen=True)
class PairOutcomes:
    source_site: str
    destination_site: str
    finished: int
    failed: int
    bytes_moved: int


def outcomes_by_site_pair() -> list[PairOutcomes]:
    """Finished and failed copies and the bytes moved, per (source site, destination site), over every
    transfer file the service holds (storage elements of no known site count as site "unknown")."""
    sites = element_site_names()
    rows = (
        TransferFile.objects.filter(state__in=(FileState.FINISHED, FileState.FAILED))
        .values("source_se", "dest_se")
        .annotate(
            finished=Count("id", filter=Q(state=FileState.FINISHED)),
            failed=Count("id", filter=Q(state=FileState.FAILED)),
            moved=Sum("transferred_bytes", filter=Q(state=FileState.FINISHED)),
        )
        .order_by()
    )
    merged: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    for row in rows:
        key = (sites.get(row["source_se"], "unknown"), sites.get(row["dest_se"], "unknown"))
        merged[key][0] += row["finished"]
        merged[key][1] += row["failed"]
        merged[key][2] += row["moved"] or 0
    return [PairOutcomes(s, d, *counts) for (s, d), counts in sorted(merged.items())]


@dataclass(frozen=True)
class PushCycles:
    total: int
    with_errors: int
    last_duration_seconds: float | None
    last_time: datetime | None


def push_cycles() -> PushCycles:
    totals = PushCycle.objects.aggregate(
        total=Count("id"), errors=Count("id", filter=~Q(error="")), last=Max("created")
    )
    last = PushCycle.objects.exclude(duration_seconds=None).order_by("-created", "-id").first()
    return PushCycles(
        totals["total"], totals["errors"], last.duration_seconds if last else None, totals["last"]
    )


def queued_tasks() -> int:
    """Task messages waiting in the platform's Celery queue on the broker (not yet taken by a worker)."""
    from django.conf import settings

    from srcnet.task_queue import app

    with app.connection_for_read() as connection:
        return int(connection.default_channel.client.llen(settings.CELERY_TASK_DEFAULT_QUEUE))


def live_workers(timeout: float) -> int:
    """Celery workers that answer a ping on the platform's broker within ``timeout`` seconds."""
    from srcnet.task_queue import app

    answers = app.control.ping(timeout=timeout) or []
    return len(answers)


@dataclass(frozen=True)
class TrafficRow:
    source: str
    destination: str
    activity: str
    owner: str
    flows: int
    bytes: int


def network_traffic() -> list[TrafficRow]:
    """The fireflies' attributed traffic by lane, activity and owner kind (rule, policy, other: a copy
    neither asked for, unattributed: flows no copy explains): bounded labels, whatever the number of
    rules; summed in the database."""
    owner = Case(
        When(rule__isnull=False, then=Value("rule")),
        When(policy__isnull=False, then=Value("policy")),
        When(file__isnull=False, then=Value("other")),
        default=Value("unattributed"),
        output_field=CharField(),
    )
    rows = (
        FlowTraffic.objects.annotate(owner=owner)
        .values("source_site", "destination_site", "activity", "owner")
        .annotate(total_flows=Sum("flows"), total_bytes=Sum("bytes"))
        .order_by("source_site", "destination_site", "activity", "owner")
    )
    return [
        TrafficRow(
            r["source_site"],
            r["destination_site"],
            r["activity"],
            r["owner"],
            r["total_flows"],
            r["total_bytes"],
        )
        for r in rows
    ]


def firefly_flows_not_accounted() -> tuple[int, int] | None:
    """Flows the accounting could not attribute, over every collector it has read (their cursors): those
    that left a journal's ring before they were read, and those no registered endpoint reported; None
    before its first read."""
    totals = FireflyCursor.objects.aggregate(
        rows=Count("pk"), missed=Sum("missed"), unmatched=Sum("unmatched")
    )
    if not totals["rows"]:
        return None
    return int(totals["missed"] or 0), int(totals["unmatched"] or 0)
