"""Reads behind the map's detail panels (a path, a site, a link when clicked) and the flows view: the
transfers moving, their recent history, and what each panel shows of the load computed in
``operations.selectors``."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q, Sum
from django.utils import timezone

from replicas.visibility import visible_jobs
from topology.choices import LinkKind, SiteKind
from topology.models import Link, NetworkPath, StorageEndpoint
from topology.physics import tcp_ceiling_bps
from topology.services.storage_urls import storage_elements
from transfers.choices import FileState
from transfers.models import LinkPause, TransferFile

from .selectors import (
    WINDOW_BYTES,
    PathLoad,
    link_loads,
    path_loads,
    paused_paths,
    site_elements,
)


def flow_row(f: TransferFile) -> dict[str, Any]:
    return {
        "id": f.pk,
        "job": str(f.job.job_id),
        "product": (f.job.metadata or {}).get("product", ""),
        "priority": f.job.priority,
        "state": f.state,
        "source": f.source_surl,
        "destination": f.dest_surl,
        "filesize": f.filesize,
        "start_time": f.start_time.isoformat() if f.start_time else None,
        "finish_time": f.finish_time.isoformat() if f.finish_time else None,
        "duration_seconds": f.duration_seconds,
        "throughput_bps": f.throughput_bps,
    }


def history(source_site_id: int, dest_site_id: int, limit: int = 50) -> list[dict[str, Any]]:
    """Measured throughput of the last ``limit`` files finished between the two sites, oldest first."""
    rows = list(
        TransferFile.objects.filter(
            state=FileState.FINISHED,
            source_se__in=site_elements(source_site_id),
            dest_se__in=site_elements(dest_site_id),
            duration_seconds__gt=0,
        ).order_by("-finish_time")[:limit]
    )
    return [
        {
            "time": f.finish_time.isoformat() if f.finish_time else None,
            "throughput_bps": f.throughput_bps,
            "bytes": f.transferred_bytes,
        }
        for f in reversed(rows)
    ]


def path_detail(path: NetworkPath, user: Any) -> dict[str, Any]:
    """A path's physics, its live flows and queue, and its measured throughput history. The load counts
    every copy; the flows listed are only those of products ``user`` may see (each names its product and
    URLs)."""
    loads = path_loads()
    load = loads.get(path.pk, PathLoad(path.pk))
    sources, destinations = site_elements(path.source_id), site_elements(path.destination_id)
    active = visible_jobs(
        user,
        TransferFile.objects.filter(state=FileState.ACTIVE, source_se__in=sources, dest_se__in=destinations)
        .select_related("job")
        .order_by("start_time"),
        "job__",
    )[:100]
    return {
        "id": path.pk,
        "name": path.name,
        "source": path.source.name,
        "destination": path.destination.name,
        "vrf": path.vrf.name if path.vrf else None,
        "rtt_ms": path.rtt_ms,
        "capacity_bps": path.capacity_bps,
        "loss_rate": path.loss_rate,
        "per_flow_ceiling_bps": tcp_ceiling_bps(WINDOW_BYTES, path.rtt_ms),
        "links": [lk.name for lk in path.ordered_links()],
        "load_bps": load.load_bps,
        "utilisation": load.load_bps / path.capacity_bps if path.capacity_bps else 0.0,
        "active": load.active,
        "queued": load.queued,
        "paused": path.pk in paused_paths([path]),
        "flows": [flow_row(f) for f in active],
        "history": history(path.source_id, path.destination_id),
    }


def site_detail(site: Any) -> dict[str, Any]:
    """A site, its storage, its links with their load, and the paths that leave or reach it."""
    loads = path_loads()
    per_link = link_loads(loads)
    links = Link.objects.filter(Q(a_end=site) | Q(b_end=site)).select_related("a_end", "b_end")
    paths = NetworkPath.objects.filter(Q(source=site) | Q(destination=site)).select_related(
        "source", "destination"
    )
    return {
        "id": site.pk,
        "name": site.name,
        "kind": site.kind,
        "kind_display": SiteKind(site.kind).label,
        "country": site.country,
        "latitude": site.latitude,
        "longitude": site.longitude,
        "description": site.description,
        "storage": [
            {"name": e.name, "role": e.role, "elements": storage_elements(e)[0::2][:2]}
            for e in StorageEndpoint.objects.filter(site=site)
        ],
        "links": [
            {
                "id": lk.pk,
                "name": lk.name,
                "other": (lk.b_end if lk.a_end_id == site.pk else lk.a_end).name,
                "capacity_bps": lk.capacity_bps,
                "rtt_ms": lk.rtt_ms,
                "load_bps": per_link.get(lk.pk, 0.0),
            }
            for lk in links
        ],
        "paths": [
            {
                "id": p.pk,
                "name": p.name,
                "source": p.source.name,
                "destination": p.destination.name,
                "rtt_ms": p.rtt_ms,
                "capacity_bps": p.capacity_bps,
                "load_bps": loads[p.pk].load_bps if p.pk in loads else 0.0,
            }
            for p in paths
        ],
    }


def link_detail(link: Link) -> dict[str, Any]:
    loads = path_loads()
    load = link_loads(loads).get(link.pk, 0.0)
    paths = link.paths.select_related("source", "destination").order_by("source__name", "destination__name")
    return {
        "id": link.pk,
        "name": link.name,
        "a": link.a_end.name,
        "b": link.b_end.name,
        "kind": link.kind,
        "owner": link.owner,
        "capacity_bps": link.capacity_bps,
        "rtt_ms": link.rtt_ms,
        "loss_rate": link.loss_rate,
        "is_up": link.is_up,
        "per_flow_ceiling_bps": tcp_ceiling_bps(WINDOW_BYTES, link.rtt_ms),
        "load_bps": load,
        "utilisation": load / link.capacity_bps if link.capacity_bps else 0.0,
        "paths": [
            {
                "id": p.pk,
                "name": p.name,
                "source": p.source.name,
                "destination": p.destination.name,
                "load_bps": loads[p.pk].load_bps if p.pk in loads else 0.0,
            }
            for p in paths
        ],
    }


def flows(user: Any) -> dict[str, Any]:
    """The flows page's poll: load per loaded path and per telescope access link, live files, the queue.
    Loads and queue sizes count every copy (what the network carries); the live files listed are only
    those of products ``user`` may see, since each names its product and URLs."""
    loads = path_loads()
    per_link = link_loads(loads)
    paths = {p.pk: p for p in NetworkPath.objects.filter(pk__in=loads)}
    paused = set(LinkPause.objects.values_list("source_se", "dest_se"))
    access = Link.objects.filter(kind=LinkKind.ACCESS).filter(
        Q(a_end__kind=SiteKind.TELESCOPE) | Q(b_end__kind=SiteKind.TELESCOPE)
    )
    active = visible_jobs(
        user,
        TransferFile.objects.filter(state=FileState.ACTIVE).select_related("job").order_by("start_time"),
        "job__",
    )
    queue = (
        TransferFile.objects.filter(state=FileState.SUBMITTED)
        .values("source_se", "dest_se", "job__priority")
        .annotate(files=Count("id"), bytes=Sum("filesize"))
        .order_by("source_se", "dest_se", "-job__priority")
    )
    return {
        "time": timezone.now().isoformat(),
        "paths": [
            {
                "id": pk,
                "name": paths[pk].name,
                "load_bps": load.load_bps,
                "capacity_bps": paths[pk].capacity_bps,
                "active": load.active,
                "queued": load.queued,
            }
            for pk, load in sorted(loads.items(), key=lambda item: paths[item[0]].name)
        ],
        "access_links": [
            {
                "id": lk.pk,
                "name": lk.name,
                "load_bps": per_link.get(lk.pk, 0.0),
                "capacity_bps": lk.capacity_bps,
            }
            for lk in access
        ],
        "active": [flow_row(f) for f in active[:200]],
        "queue": [
            {
                "source_se": q["source_se"],
                "dest_se": q["dest_se"],
                "priority": q["job__priority"],
                "files": q["files"],
                "bytes": q["bytes"] or 0,
                "paused": (q["source_se"], q["dest_se"]) in paused,
            }
            for q in queue
        ],
    }
