"""Write the database's topology back out in the file format ``import_topology`` reads."""

from __future__ import annotations

from typing import Any

import yaml

from ..models import (
    Dtn,
    Link,
    NetworkPath,
    PointOfPresence,
    RegionalCentre,
    Site,
    StorageEndpoint,
    Telescope,
    Vrf,
)


def _site(site: Site) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": site.name,
        "region": site.region,
        "country": site.country,
        "latitude": site.latitude,
        "longitude": site.longitude,
    }
    if site.vrf_id:
        out["vrf"] = site.vrf.name  # type: ignore[union-attr]
    if site.description:
        out["description"] = site.description
    return out


def export_document(*, compute_rules: list[dict[str, list[str]]] | None = None) -> dict[str, Any]:
    """The topology as a document (plain data); computed paths are described by their rules."""
    doc: dict[str, Any] = {"version": 1}
    doc["vrfs"] = [
        {
            k: v
            for k, v in {
                "name": vrf.name,
                "scope": vrf.scope,
                "parent": vrf.parent.name if vrf.parent else None,
                "route_distinguisher": vrf.route_distinguisher,
                "description": vrf.description or None,
            }.items()
            if v is not None
        }
        for vrf in Vrf.objects.select_related("parent")
    ]
    doc["telescopes"] = [
        {**_site(t), "daily_volume": t.daily_volume_bytes, "sdp_buffer": t.sdp_buffer_bytes}
        for t in Telescope.objects.select_related("vrf")
    ]
    doc["regional_centres"] = [
        {
            **_site(c),
            "distribution_centre": c.is_distribution_centre,
            "share_weight": c.share_weight,
            "budget_per_telescope": c.budget_per_telescope_bps,
            "peak": c.peak_bps,
        }
        for c in RegionalCentre.objects.select_related("vrf")
    ]
    doc["points_of_presence"] = [
        {**_site(p), **({"operator": p.operator} if p.operator else {})}
        for p in PointOfPresence.objects.select_related("vrf")
    ]
    doc["storage_endpoints"] = [
        {
            "name": s.name,
            "site": s.site.name,
            "role": s.role,
            "hostname": s.hostname,
            "root_port": s.root_port,
            "http_port": s.http_port,
            "prefix": s.prefix,
            "tpc_scheme": s.tpc_scheme,
            **({"capacity": s.capacity_bytes} if s.capacity_bytes is not None else {}),
            "active": s.is_active,
        }
        for s in StorageEndpoint.objects.select_related("site")
    ]
    doc["dtns"] = [
        {
            "name": d.name,
            "site": d.site.name,
            "hostname": d.hostname,
            "nic_speed": d.nic_speed_bps,
            "tcp_window": d.tcp_window_bytes,
            "tuning_profile": d.tuning_profile,
        }
        for d in Dtn.objects.select_related("site")
    ]
    doc["links"] = [
        {
            "name": lk.name,
            "a": lk.a_end.name,
            "b": lk.b_end.name,
            "kind": lk.kind,
            "capacity": lk.capacity_bps,
            "rtt_ms": lk.rtt_ms,
            "loss": lk.loss_rate,
            "owner": lk.owner,
            "capex_eur": lk.capex_eur,
            "opex_eur_per_year": lk.opex_eur_per_year,
            "vrfs": sorted(v.name for v in lk.vrfs.all()),
            "up": lk.is_up,
        }
        for lk in Link.objects.select_related("a_end", "b_end").prefetch_related("vrfs")
    ]
    declared = NetworkPath.objects.filter(is_computed=False).select_related("source", "destination", "vrf")
    paths: dict[str, Any] = {}
    if compute_rules is None:
        compute_rules = _rules_from_existing_paths()
    if compute_rules:
        paths["compute"] = compute_rules
    paths["declared"] = [
        {
            "name": p.name,
            "source": p.source.name,
            "destination": p.destination.name,
            "links": [h.link.name for h in p.hops.select_related("link").order_by("position")],
            **({"vrf": p.vrf.name} if p.vrf else {}),
        }
        for p in declared
    ]
    doc["paths"] = paths
    return doc


def _rules_from_existing_paths() -> list[dict[str, list[str]]]:
    """Recover compute rules from the kinds of the computed paths' ends (one rule per source kind)."""
    pairs = set(NetworkPath.objects.filter(is_computed=True).values_list("source__kind", "destination__kind"))
    by_source: dict[str, set[str]] = {}
    for source_kind, destination_kind in pairs:
        by_source.setdefault(source_kind, set()).add(destination_kind)
    return [{"from": [k], "to": sorted(v)} for k, v in sorted(by_source.items())]


def export_topology() -> str:
    return yaml.safe_dump(export_document(), sort_keys=False, default_flow_style=None, width=140)
