"""Reads behind the map and the flows views: which storage element is where, and the load of paths and links.

The load rule (docs/portal.md):
- A transfer's storage elements (``scheme://host:port``) map to the site of the storage endpoint serving
  them (root:// and xroot:// on its root port, davs:// and https:// on its HTTP port).
- The ACTIVE files between a site S and a site D are carried by one path: the computed (shortest-RTT)
  path from S to D, else the lowest-RTT declared one.
- Each active file is counted at the rate measured on its storage pair over the last hour (bytes over
  seconds of the files that finished there); with no measurement, at the path's per-flow TCP ceiling with
  a 1 GiB window. A path's load is the sum over its files, capped at its bottleneck capacity.
- A link's load is the sum of the loads of the paths through it; its utilisation is load / capacity.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.db.models import Count, Prefetch, Q, Sum
from django.utils import timezone

from replicas.visibility import visible_jobs
from topology.choices import LinkKind, SiteKind
from topology.models import Link, NetworkPath, PathHop, StorageEndpoint
from topology.physics import tcp_ceiling_bps
from topology.services.storage_urls import storage_elements
from transfers.choices import FileState
from transfers.models import LinkPause, TransferFile

WINDOW_BYTES = 2**30
MEASURE_WINDOW = timedelta(hours=1)
# Utilisation bounds of the map's colours: idle, below BUSY, below CONGESTED, congested.
BUSY = 0.5
CONGESTED = 0.8


def element_sites() -> dict[str, int]:
    """Storage element -> site id, over every endpoint."""
    out: dict[str, int] = {}
    for endpoint in StorageEndpoint.objects.only(
        "hostname", "root_port", "http_port", "tpc_scheme", "site_id"
    ):
        for element in storage_elements(endpoint):
            out[element] = endpoint.site_id
    return out


def site_elements(site_id: int) -> list[str]:
    return [e for ep in StorageEndpoint.objects.filter(site_id=site_id) for e in storage_elements(ep)]


def level(utilisation: float) -> str:
    """The colour class of a utilisation (the map's legend)."""
    if utilisation <= 0:
        return "idle"
    if utilisation < BUSY:
        return "low"
    return "busy" if utilisation < CONGESTED else "congested"


@dataclass
class PathLoad:
    path_id: int
    load_bps: float = 0.0
    active: int = 0
    queued: int = 0
    links: list[tuple[str, str]] = field(default_factory=list)


def carrier_paths(pairs: Iterable[tuple[int, int]]) -> dict[tuple[int, int], NetworkPath]:
    """The path that carries each (source site, destination site) pair's flows."""
    pairs = set(pairs)
    if not pairs:
        return {}
    query = Q()
    for s, d in pairs:
        query |= Q(source_id=s, destination_id=d)
    carriers: dict[tuple[int, int], NetworkPath] = {}
    for path in NetworkPath.objects.filter(query).order_by("-is_computed", "rtt_ms", "id"):
        carriers.setdefault((path.source_id, path.destination_id), path)
    return carriers


def measured_rates(since: Any = None) -> dict[tuple[str, str], float]:
    """Bits per second measured per storage pair over the files that finished since ``since``."""
    since = since or timezone.now() - MEASURE_WINDOW
    rows = (
        TransferFile.objects.filter(state=FileState.FINISHED, finish_time__gte=since, duration_seconds__gt=0)
        .values("source_se", "dest_se")
        .annotate(bytes=Sum("transferred_bytes"), seconds=Sum("duration_seconds"))
    )
    return {(r["source_se"], r["dest_se"]): r["bytes"] * 8 / r["seconds"] for r in rows if r["seconds"]}


def path_loads() -> dict[int, PathLoad]:
    """Load, active and queued files of every path that carries or waits for something now."""
    sites = element_sites()
    counts = (
        TransferFile.objects.filter(state__in=(FileState.ACTIVE, FileState.SUBMITTED))
        .values("source_se", "dest_se")
        .annotate(
            active=Count("id", filter=Q(state=FileState.ACTIVE)),
            queued=Count("id", filter=Q(state=FileState.SUBMITTED)),
        )
        .order_by()
    )
    by_pair: dict[tuple[int, int], list[Any]] = defaultdict(list)
    for row in counts:
        s, d = sites.get(row["source_se"]), sites.get(row["dest_se"])
        if s is not None and d is not None and s != d:
            by_pair[(s, d)].append(row)
    carriers = carrier_paths(by_pair)
    rates = measured_rates()
    loads: dict[int, PathLoad] = {}
    for pair, rows in by_pair.items():
        path = carriers.get(pair)
        if path is None:
            continue  # no modelled path between the two sites: the flows are not drawn
        load = loads.setdefault(path.pk, PathLoad(path.pk))
        ceiling = min(tcp_ceiling_bps(WINDOW_BYTES, path.rtt_ms), float(path.capacity_bps))
        for row in rows:
            link: tuple[str, str] = (row["source_se"], row["dest_se"])
            load.active += row["active"]
            load.queued += row["queued"]
            load.load_bps += row["active"] * rates.get(link, ceiling)
            load.links.append(link)
        load.load_bps = min(load.load_bps, float(path.capacity_bps))
    return loads


def link_loads(loads: dict[int, PathLoad]) -> dict[int, float]:
    """Link id -> bits per second, summed over the loaded paths through it."""
    out: dict[int, float] = defaultdict(float)
    for hop in PathHop.objects.filter(path_id__in=loads).values("path_id", "link_id"):
        out[hop["link_id"]] += loads[hop["path_id"]].load_bps
    return dict(out)


def path_storage_links(path: NetworkPath) -> list[tuple[str, str]]:
    """The transfer-service links (source element, destination element) a path's flows use: every pair of
    storage endpoints at its two sites, over root:// and over davs://."""
    sources = list(StorageEndpoint.objects.filter(site_id=path.source_id))
    destinations = list(StorageEndpoint.objects.filter(site_id=path.destination_id))
    pairs = []
    for s in sources:
        for d in destinations:
            pairs.append((f"root://{s.hostname}:{s.root_port}", f"root://{d.hostname}:{d.root_port}"))
            pairs.append((f"davs://{s.hostname}:{s.http_port}", f"davs://{d.hostname}:{d.http_port}"))
    return pairs


def paused_paths(paths: Iterable[NetworkPath]) -> set[int]:
    """Paths whose every transfer-service link is paused."""
    paused = set(LinkPause.objects.values_list("source_se", "dest_se"))
    out = set()
    for path in paths:
        links = path_storage_links(path)
        if links and all(link in paused for link in links):
            out.add(path.pk)
    return out


def network(*, with_paths: bool = True) -> dict[str, Any]:
    """Everything the map draws: sites at their coordinates, links with load, and the paths."""
    from topology.models import Site

    loads = path_loads()
    per_link = link_loads(loads)
    sites = [
        {
            "id": s.pk,
            "name": s.name,
            "kind": s.kind,
            "country": s.country,
            "latitude": s.latitude,
            "longitude": s.longitude,
            "description": s.description,
        }
        for s in Site.objects.all()
    ]
    links = []
    for lk in Link.objects.all():
        load = per_link.get(lk.pk, 0.0)
        utilisation = load / lk.capacity_bps if lk.capacity_bps else 0.0
        links.append(
            {
                "id": lk.pk,
                "name": lk.name,
                "a": lk.a_end_id,
                "b": lk.b_end_id,
                "kind": lk.kind,
                "capacity_bps": lk.capacity_bps,
                "rtt_ms": lk.rtt_ms,
                "is_up": lk.is_up,
                "load_bps": load,
                "utilisation": utilisation,
                "level": level(utilisation),
            }
        )
    out: dict[str, Any] = {"time": timezone.now().isoformat(), "sites": sites, "links": links}
    if with_paths:
        paths = NetworkPath.objects.select_related("source", "destination").prefetch_related(
            Prefetch("hops", queryset=PathHop.objects.order_by("position"))
        )
        out["paths"] = [
            {
                "id": p.pk,
                "name": p.name,
                "source": p.source_id,
                "destination": p.destination_id,
                "links": [h.link_id for h in p.hops.all()],
                "load_bps": loads[p.pk].load_bps if p.pk in loads else 0.0,
                "active": loads[p.pk].active if p.pk in loads else 0,
            }
            for p in paths
        ]
    return out


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
