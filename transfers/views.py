"""Portal pages of the transfer service."""

import logging
from typing import Any

from django.contrib.auth.decorators import login_required
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from replicas.visibility import visible_jobs
from srcnet.views import Column, object_list
from topology.models import NetworkPath

from . import filtersets
from .choices import TERMINAL_JOB_STATES
from .models import LinkPause, TransferFile, TransferJob

log = logging.getLogger(__name__)


@login_required
def files(request: HttpRequest) -> HttpResponse:
    return object_list(
        request,
        title="Transfers",
        queryset=visible_jobs(
            request.user, TransferFile.objects.select_related("job").order_by("-id"), "job__"
        ),
        filterset_class=filtersets.TransferFileFilterSet,
        columns=[
            Column("Job", lambda f: str(f.job.job_id)[:8]),
            Column("Source", lambda f: f.source_surl),
            Column("Destination", lambda f: f.dest_surl),
            Column("State", lambda f: f.state),
            Column("Attempts", lambda f: f.attempts),
            Column("MB/s", lambda f: f"{f.throughput_bps / 8e6:.1f}" if f.throughput_bps else ""),
            Column("Reason", lambda f: f.reason),
        ],
    )


@login_required
def flows(request: HttpRequest) -> HttpResponse:
    """Live flows: a polling chart of load per path and per telescope access link, the jobs still moving,
    the queue per link, and the paths an operator may pause or resume."""
    from operations.details import flows as live
    from operations.selectors import path_loads, paused_paths

    loads = path_loads()
    paused_pairs = _paused_site_pairs()
    candidates = list(
        NetworkPath.objects.filter(pk__in=loads).select_related("source", "destination")
    ) + _carriers(paused_pairs)
    paused = paused_paths(candidates)
    paths = sorted({p.pk: p for p in candidates}.values(), key=lambda p: p.name)
    jobs = (
        visible_jobs(request.user, TransferJob.objects.exclude(state__in=TERMINAL_JOB_STATES))
        .annotate(n_files=Count("files"))
        .order_by("-priority", "created")[:200]
    )
    return render(
        request,
        "transfers/flows.html",
        {
            "snapshot": live(request.user),
            "paths": [{"path": p, "load": loads.get(p.pk), "paused": p.pk in paused} for p in paths],
            "jobs": jobs,
            "poll_ms": _poll_ms(request),
            **_access_link_history(),
        },
    )


def _access_link_history() -> dict[str, Any]:
    """The access links' last hour from Prometheus, when one is configured (monitoring/history.py):
    ``history`` (None without one) and ``history_error`` (why it could not be read)."""
    from monitoring.history import (
        CHART_HEIGHT,
        CHART_WIDTH,
        HistoryUnavailable,
        access_link_history,
        rate_text,
    )

    try:
        history = access_link_history()
    except HistoryUnavailable as exc:
        log.warning("flows: the access links' history could not be read: %s", exc)
        return {"history": None, "history_error": str(exc)}
    if history is None:
        return {"history": None, "history_error": None}
    rows = [
        {
            "link": link,
            "latest": rate_text(link.latest_bps),
            "mean": rate_text(link.mean_bps),
            "max": rate_text(link.max_bps),
            "target": rate_text(link.target_bps),
            "polyline": link.polyline(history.start, history.end),
            "target_y": link.target_y(),
        }
        for link in history.links
    ]
    return {
        "history": {"rows": rows, "width": CHART_WIDTH, "height": CHART_HEIGHT},
        "history_error": None,
    }


def _poll_ms(request: HttpRequest) -> int:
    try:
        return max(500, int(request.GET.get("poll", "5000")))
    except ValueError:
        return 5000


def _paused_site_pairs() -> set[tuple[int, int]]:
    from operations.selectors import element_sites

    sites = element_sites()
    pairs = set()
    for source_se, dest_se in LinkPause.objects.values_list("source_se", "dest_se"):
        s, d = sites.get(source_se), sites.get(dest_se)
        if s is not None and d is not None:
            pairs.add((s, d))
    return pairs


def _carriers(pairs: set[tuple[int, int]]) -> list[NetworkPath]:
    """Every path between each paused pair of sites (any of them may be the one an operator paused)."""
    if not pairs:
        return []
    query = Q()
    for s, d in pairs:
        query |= Q(source_id=s, destination_id=d)
    return list(NetworkPath.objects.filter(query).select_related("source", "destination"))
