"""Path computation and walk validation over small hand-made graphs."""

import pytest

from topology.graph import LinkEdge, NoPathError, WalkError, build_graph, shortest_paths, validate_walk

LINKS = [
    LinkEdge("t-p", "T", "P", 100, 7.0),
    LinkEdge("p-s", "P", "S", 100, 50.0),
    LinkEdge("s-l", "S", "L", 100, 160.0),
    LinkEdge("p-c", "P", "C", 100, 50.0),
    LinkEdge("c-l-slow", "C", "L", 10, 100.0),
    LinkEdge("l-src", "L", "SRC", 100, 5.0),
    LinkEdge("down", "T", "SRC", 100, 1.0, is_up=False),
]


def test_lowest_rtt_path_is_chosen():
    graph = build_graph(LINKS)
    assert shortest_paths(graph, "T", "SRC") == [["t-p", "p-c", "c-l-slow", "l-src"]]


def test_capacity_floor_excludes_thin_links():
    graph = build_graph(LINKS)
    assert shortest_paths(graph, "T", "SRC", min_capacity_bps=50) == [["t-p", "p-s", "s-l", "l-src"]]


def test_k_paths_come_in_increasing_rtt():
    paths = shortest_paths(build_graph(LINKS), "T", "SRC", k=2)
    assert paths == [["t-p", "p-c", "c-l-slow", "l-src"], ["t-p", "p-s", "s-l", "l-src"]]


def test_links_that_are_down_are_not_used():
    graph = build_graph(LINKS)
    assert all("down" not in p for p in shortest_paths(graph, "T", "SRC", k=5))


def test_avoided_sites_are_not_transit():
    with pytest.raises(NoPathError):
        shortest_paths(build_graph(LINKS), "T", "SRC", avoid_sites=["P"])


def test_unknown_site_has_no_path():
    with pytest.raises(NoPathError, match="no path from T to X"):
        shortest_paths(build_graph(LINKS), "T", "X")


def test_valid_walk_passes_in_either_link_direction():
    by = {lk.name: lk for lk in LINKS}
    validate_walk("SRC", "T", [by["l-src"], by["s-l"], by["p-s"], by["t-p"]])


@pytest.mark.parametrize(
    ("hops", "message"),
    [
        ([], "at least one link"),
        (["t-p", "s-l"], "does not start at P"),
        (["t-p", "p-s"], "ends at S, not at SRC"),
        (["t-p", "t-p"], "each link once"),
    ],
)
def test_bad_walks_are_rejected(hops, message):
    by = {lk.name: lk for lk in LINKS}
    with pytest.raises(WalkError, match=message):
        validate_walk("T", "SRC", [by[h] for h in hops])
