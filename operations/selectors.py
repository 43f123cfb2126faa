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
