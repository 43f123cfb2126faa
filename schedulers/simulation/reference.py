"""The reference topology as planner input without a database (pure): for benchmarks and pure tests.

It reads topology/data/reference.yaml and computes the same shortest-RTT paths the importer stores
(topology.graph, other storage sites never used as transit); snapshot.py reads the stored ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from topology.graph import LinkEdge, build_graph, shortest_paths
from topology.yamlio import load, parse_bytes, parse_rate

from ..planning.types import LinkSpec, PathSpec, SiteSpec, TelescopeSpec, Topology

REFERENCE_YAML = Path(__file__).resolve().parents[2] / "topology" / "data" / "reference.yaml"


def topology_from_yaml(text: str) -> Topology:
    """Planner input from a topology file (telescopes, centres, links; paths computed)."""
    data: dict[str, Any] = load(text)
    links = [
        LinkSpec(
            lk["name"],
            float(parse_rate(lk["capacity"])),
            float(lk["rtt_ms"]),
            float(lk.get("loss_rate", 0.0)),
            float(lk.get("opex_eur_per_year", 0.0)),
            lk["a"],
            lk["b"],
        )
        for lk in data["links"]
    ]
    ends = {lk["name"]: (lk["a"], lk["b"], lk.get("kind")) for lk in data["links"]}
    telescopes = []
    for t in data["telescopes"]:
        access = sorted(n for n, (a, b, kind) in ends.items() if kind == "access" and t["name"] in (a, b))
        telescopes.append(
            TelescopeSpec(
                t["name"],
                access[0],
                float(parse_bytes(t.get("daily_volume", "1PB"))),
                float(parse_bytes(t.get("sdp_buffer", "2PB"))),
            )
        )
    sites = [
        SiteSpec(
            s["name"],
            float(s.get("share_weight", 1.0)),
            float(parse_rate(s.get("budget_per_telescope", "20G"))),
            float(parse_rate(s.get("peak", "70G"))),
            bool(s.get("distribution_centre", False)),
        )
        for s in data["regional_centres"]
    ]
    graph = build_graph(
        LinkEdge(n, a, b, int(c.capacity_bps), c.rtt_ms)
        for (n, (a, b, _)), c in zip(ends.items(), links, strict=True)
    )
    storage = [t.name for t in telescopes] + [s.name for s in sites]
    centres = [s.name for s in sites if s.is_distribution_centre]
    srcs = [s.name for s in sites if not s.is_distribution_centre]
    pairs = [(t.name, s.name) for t in telescopes for s in sites]
    pairs += [(c, s) for c in centres for s in srcs] + [(a, b) for a in srcs for b in srcs if a != b]
    paths = []
    for source, destination in pairs:
        (names,) = shortest_paths(graph, source, destination, k=1, avoid_sites=storage)
        paths.append(PathSpec(source, destination, tuple(names)))
    window = min(float(parse_bytes(d.get("tcp_window", "1GiB"))) for d in data.get("dtns", [{}]))
    return Topology(tuple(telescopes), tuple(sites), tuple(links), tuple(paths), window)


def reference_topology() -> Topology:
    return topology_from_yaml(REFERENCE_YAML.read_text())


def endpoints_from_yaml(text: str) -> dict[str, tuple[str, str]]:
    """Storage endpoint name -> (its site, its role) from a topology file."""
    data: dict[str, Any] = load(text)
    return {e["name"]: (e["site"], e.get("role", "disk")) for e in data.get("storage_endpoints") or []}


def reference_endpoints() -> dict[str, tuple[str, str]]:
    return endpoints_from_yaml(REFERENCE_YAML.read_text())
