"""The path a product's copies take over the network, for the map (``/topology/map/?product=<id>``).

Everything comes from what the platform knows, never from the browser:
- each transfer that moves the product (the push loop's and the rules' jobs, which name it in
  ``metadata.product``; Rucio's conveyor's jobs at the FTS3 endpoint, whose files carry its scope and
  ``<product>/<file>`` name) gives a leg from its source storage's site to its destination storage's site;
- each copy with no transfer yet (planned) gives the leg the plan will use: from the replica it is copied
  from (``upstream``), else the product's SDP storage, through its distribution centre when relayed (``via``:
  two legs);
- each leg follows the topology's path between its two sites, the one that carries their flows
  (``operations.selectors``: the computed shortest-RTT path, else the lowest-RTT declared one), link by link.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from replicas.choices import ReplicaState
from replicas.models import DataProduct
from replicas.selectors import product_files
from topology.choices import StorageRole
from topology.models import Link, NetworkPath, PathHop, Site
from transfers.models import TransferFile

from .selectors import carrier_paths, element_sites


@dataclass
class _Leg:
    source: int
    destination: int
    basis: str  # "transfers" or "plan"
    copies: set[str] = field(default_factory=set)  # destination storage endpoints
    states: Counter[str] = field(default_factory=Counter)


def product_route(product: DataProduct) -> dict[str, Any]:
    """The legs of ``product``'s copies with the path and links of each, and the links and sites to
    highlight on the map."""
    legs: dict[tuple[int, int], _Leg] = {}
    sites_of = element_sites()
    files = TransferFile.objects.filter(product_files(product)).values_list("source_se", "dest_se", "state")
    endpoints = {
        r.endpoint.name: r
        for r in product.replicas.select_related("endpoint__site", "upstream__endpoint", "via")
    }
    dest_sites = {r.endpoint.site_id: name for name, r in endpoints.items()}
    for source_se, dest_se, state in files:
        s, d = sites_of.get(source_se), sites_of.get(dest_se)
        if s is None or d is None or s == d:
            continue
        leg = legs.setdefault((s, d), _Leg(s, d, "transfers"))
        leg.states[state] += 1
        if d in dest_sites:
            leg.copies.add(dest_sites[d])
    reached = {d for _, d in legs}
    for name, replica in endpoints.items():
        if replica.endpoint.role == StorageRole.SDP and replica.upstream_id is None:
            continue  # written there by the SDP
        site = replica.endpoint.site_id
        if site in reached or replica.state == ReplicaState.FAILED:
            continue
        origin = replica.upstream.endpoint.site_id if replica.upstream else product.source.site_id
        hops = [origin, replica.via_id, site] if replica.via_id else [origin, site]
        for s, d in itertools.pairwise(hops):
            leg = legs.setdefault((s, d), _Leg(s, d, "plan"))
            leg.states[replica.state] += 1
        legs[(hops[-2], site)].copies.add(name)
    carriers = carrier_paths(legs)
    hops_of: dict[int, list[int]] = {}
    for hop in PathHop.objects.filter(path__in=[p.pk for p in carriers.values()]).order_by("position"):
        hops_of.setdefault(hop.path_id, []).append(hop.link_id)
    names = dict(Site.objects.filter(pk__in={s for pair in legs for s in pair}).values_list("pk", "name"))
    used = {i for ids in hops_of.values() for i in ids}
    link_names = dict(Link.objects.filter(pk__in=used).values_list("pk", "name"))
    out_legs: list[dict[str, Any]] = []
    for (s, d), leg in legs.items():
        path: NetworkPath | None = carriers.get((s, d))
        links = hops_of.get(path.pk, []) if path else []
        out_legs.append(
            {
                "source": names.get(s, str(s)),
                "destination": names.get(d, str(d)),
                "source_id": s,
                "destination_id": d,
                "basis": leg.basis,
                "copies": sorted(leg.copies),
                "states": dict(sorted(leg.states.items())),
                "path": path.pk if path else None,
                "path_name": path.name if path else "",
                "rtt_ms": path.rtt_ms if path else None,
                "links": links,
                "link_names": [link_names[i] for i in links],
            }
        )
    out_legs.sort(key=lambda g: (g["basis"] != "transfers", g["source"], g["destination"]))
    return {
        "product": product.did,
        "product_id": product.pk,
        "legs": out_legs,
        "links": sorted({i for ids in (hops_of.get(p.pk, []) for p in carriers.values()) for i in ids}),
        "sites": sorted({i for g in out_legs for i in (g["source_id"], g["destination_id"])}),
    }
