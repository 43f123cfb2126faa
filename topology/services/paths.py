"""Computing and declaring network paths, and keeping their flattened metrics right."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from django.core.exceptions import ValidationError
from django.db import transaction

from ..choices import VRF_SCOPE_RANK, SiteKind, VrfScope
from ..graph import LinkEdge, NoPathError, WalkError, build_graph, shortest_paths, validate_walk
from ..models import Link, NetworkPath, PathHop, Site, Vrf
from ..physics import path_metrics

STORAGE_KINDS = (SiteKind.TELESCOPE, SiteKind.SRC, SiteKind.DISTRIBUTION_CENTRE)


@dataclass(frozen=True)
class ComputeRule:
    """Compute a path from every site of the ``sources`` kinds to every site of the ``destinations`` kinds."""

    sources: tuple[str, ...]
    destinations: tuple[str, ...]


@dataclass
class ComputeResult:
    created: int = 0
    unreachable: list[str] = field(default_factory=list)


def _edge(link: Link, names: dict[int, str]) -> LinkEdge:
    return LinkEdge(
        name=link.name,
        a_end=names[link.a_end_id],
        b_end=names[link.b_end_id],
        capacity_bps=link.capacity_bps,
        rtt_ms=link.rtt_ms,
        is_up=link.is_up,
    )


def _path_vrf(links: Sequence[Link], vrfs_by_link: dict[int, list[Vrf]]) -> Vrf | None:
    """The broadest VRF the path crosses: a path over an intercontinental link belongs to the global VRF."""
    candidates = [vrf for link in links for vrf in vrfs_by_link.get(link.pk, [])]
    if not candidates:
        return None
    return max(candidates, key=lambda v: (VRF_SCOPE_RANK[VrfScope(v.scope)], v.name))


@transaction.atomic
def compute_paths(rules: Sequence[ComputeRule]) -> ComputeResult:
    """Replace every computed path with the shortest-RTT path over the links that are up now."""
    NetworkPath.objects.filter(is_computed=True).delete()
    result = ComputeResult()
    if not rules:
        return result
    sites = list(Site.objects.all())
    names = {s.pk: s.name for s in sites}
    by_name = {s.name: s for s in sites}
    links = list(Link.objects.all())
    links_by_name = {lk.name: lk for lk in links}
    vrfs_by_link: dict[int, list[Vrf]] = {}
    for through in Link.vrfs.through.objects.select_related("vrf"):
        vrfs_by_link.setdefault(through.link_id, []).append(through.vrf)
    graph = build_graph(_edge(lk, names) for lk in links)
    storage_sites = [s.name for s in sites if s.kind in STORAGE_KINDS]
    new_paths: list[tuple[NetworkPath, list[Link]]] = []
    pairs_seen: set[tuple[str, str]] = set()
    for rule in rules:
        sources = [s for s in sites if s.kind in rule.sources]
        destinations = [s for s in sites if s.kind in rule.destinations]
        for source in sources:
            for destination in destinations:
                pair = (source.name, destination.name)
                if source.pk == destination.pk or pair in pairs_seen:
                    continue
                pairs_seen.add(pair)
                try:
                    (names_on_path,) = shortest_paths(
                        graph, source.name, destination.name, k=1, avoid_sites=storage_sites
                    )
                except NoPathError:
                    result.unreachable.append(f"no path from {source.name} to {destination.name}")
                    continue
                hops = [links_by_name[n] for n in names_on_path]
                path = NetworkPath(
                    name=f"{source.name}--{destination.name}",
                    source=by_name[source.name],
                    destination=by_name[destination.name],
                    is_computed=True,
                    vrf=_path_vrf(hops, vrfs_by_link),
                )
                _apply_metrics(path, hops)
                new_paths.append((path, hops))
    NetworkPath.objects.bulk_create([p for p, _ in new_paths])
    PathHop.objects.bulk_create(
        [PathHop(path=p, link=link, position=i) for p, hops in new_paths for i, link in enumerate(hops)]
    )
    result.created = len(new_paths)
    return result


def _apply_metrics(path: NetworkPath, hops: Sequence[Link]) -> None:
    metrics = path_metrics([(lk.capacity_bps, lk.rtt_ms, lk.loss_rate, lk.opex_eur_per_year) for lk in hops])
    path.capacity_bps = metrics.capacity_bps
    path.rtt_ms = metrics.rtt_ms
    path.loss_rate = metrics.loss_rate
    path.opex_eur_per_year = metrics.opex_eur_per_year
    path.hop_count = len(hops)


@transaction.atomic
def save_declared_path(
    *, name: str, source: str, destination: str, link_names: Sequence[str], vrf: str | None = None
) -> bool:
    """Create or replace a declared path; raises ValidationError naming the field. True if created."""
    sites = {s.name: s for s in Site.objects.filter(name__in=[source, destination])}
    for field_name, site_name in (("source", source), ("destination", destination)):
        if site_name not in sites:
            raise ValidationError({field_name: f"no site named {site_name!r}"})
    links = {lk.name: lk for lk in Link.objects.filter(name__in=link_names).select_related("a_end", "b_end")}
    missing = [n for n in link_names if n not in links]
    if missing:
        raise ValidationError({"links": f"no link named {missing[0]!r}"})
    hops = [links[n] for n in link_names]
    try:
        validate_walk(
            source,
            destination,
            [
                LinkEdge(lk.name, lk.a_end.name, lk.b_end.name, lk.capacity_bps, lk.rtt_ms, lk.is_up)
                for lk in hops
            ],
        )
    except WalkError as exc:
        raise ValidationError({"links": str(exc)}) from exc
    path = NetworkPath.objects.filter(name=name).first()
    created = path is None
    path = path or NetworkPath(name=name)
    path.source, path.destination, path.is_computed = sites[source], sites[destination], False
    path.vrf = Vrf.objects.filter(name=vrf).first() if vrf else None
    if vrf and path.vrf is None:
        raise ValidationError({"vrf": f"no VRF named {vrf!r}"})
    _apply_metrics(path, hops)
    path.full_clean()
    path.save()
    path.hops.all().delete()
    PathHop.objects.bulk_create([PathHop(path=path, link=link, position=i) for i, link in enumerate(hops)])
    return created
