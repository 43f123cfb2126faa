"""Path computation over the link graph (pure: no Django)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import networkx as nx


@dataclass(frozen=True)
class LinkEdge:
    """What path computation needs of a link."""

    name: str
    a_end: str
    b_end: str
    capacity_bps: int
    rtt_ms: float
    is_up: bool = True


class NoPathError(ValueError):
    """No usable path joins the two sites."""


class WalkError(ValueError):
    """A declared sequence of links is not a walk from the source to the destination."""


def build_graph(links: Iterable[LinkEdge]) -> nx.MultiGraph:
    graph = nx.MultiGraph()
    for link in links:
        if link.is_up:
            graph.add_edge(
                link.a_end, link.b_end, key=link.name, rtt_ms=link.rtt_ms, capacity_bps=link.capacity_bps
            )
    return graph


def _collapse(graph: nx.MultiGraph, min_capacity_bps: int) -> nx.Graph:
    """The lowest-RTT link between each pair of sites that has enough capacity (parallel links)."""
    simple = nx.Graph()
    simple.add_nodes_from(graph.nodes)
    for a, b, key, data in graph.edges(keys=True, data=True):
        if data["capacity_bps"] < min_capacity_bps:
            continue
        current = simple.get_edge_data(a, b)
        if current is None or (data["rtt_ms"], key) < (current["rtt_ms"], current["link"]):
            simple.add_edge(a, b, rtt_ms=data["rtt_ms"], link=key)
    return simple


def shortest_paths(
    graph: nx.MultiGraph,
    source: str,
    destination: str,
    *,
    k: int = 1,
    min_capacity_bps: int = 0,
    avoid_sites: Sequence[str] = (),
) -> list[list[str]]:
    """Up to ``k`` loop-free paths by increasing RTT, each a list of link names.

    ``avoid_sites`` keeps other storage sites from being used as transit (a path to an SRC must not run
    through another SRC's campus)."""
    simple = _collapse(graph, min_capacity_bps)
    simple.remove_nodes_from([s for s in avoid_sites if s not in (source, destination)])
    if source not in simple or destination not in simple:
        raise NoPathError(f"no path from {source} to {destination}")
    try:
        generator = nx.shortest_simple_paths(simple, source, destination, weight="rtt_ms")
        node_paths = list(itertools.islice(generator, k))
    except nx.NetworkXNoPath as exc:
        raise NoPathError(f"no path from {source} to {destination}") from exc
    return [[simple.edges[a, b]["link"] for a, b in itertools.pairwise(nodes)] for nodes in node_paths]


def validate_walk(source: str, destination: str, hops: Sequence[LinkEdge]) -> None:
    """Check that ``hops`` lead from ``source`` to ``destination``, each link continuing the last."""
    if not hops:
        raise WalkError("a path needs at least one link")
    names = [h.name for h in hops]
    if len(set(names)) != len(names):
        raise WalkError("a path uses each link once")
    here = source
    visited = {source}
    for index, hop in enumerate(hops):
        if here not in (hop.a_end, hop.b_end):
            raise WalkError(f"link {index + 1} ({hop.name}) does not start at {here}")
        here = hop.b_end if hop.a_end == here else hop.a_end
        if here in visited and here != destination:
            raise WalkError(f"the path visits {here} twice")
        visited.add(here)
    if here != destination:
        raise WalkError(f"the path ends at {here}, not at {destination}")
