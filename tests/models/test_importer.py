"""Importing topology files: the reference file, idempotence, round trip, and errors naming line and field."""

import pytest

from topology.graph import LinkEdge, build_graph, shortest_paths
from topology.models import Link, NetworkPath, RegionalCentre, Site, StorageEndpoint, Telescope
from topology.services.exporter import export_topology
from topology.services.importer import import_topology
from topology.services.paths import STORAGE_KINDS
from topology.yamlio import TopologyFileError

pytestmark = pytest.mark.django_db

SMALL = """\
version: 1
vrfs:
  - {name: global, scope: global}
telescopes:
  - {name: SKA1-Low, region: oceania, country: AU, latitude: -26.7, longitude: 116.6}
regional_centres:
  - {name: AUSRC, region: oceania, country: AU, latitude: -31.9, longitude: 115.8}
points_of_presence:
  - {name: Perth, region: oceania, country: AU, latitude: -31.9, longitude: 115.8}
links:
  - {name: access, a: SKA1-Low, b: Perth, capacity: 100G, rtt_ms: 7}
  - {name: campus, a: AUSRC, b: Perth, capacity: 100G, rtt_ms: 0.5, vrfs: [global]}
paths:
  compute:
    - {from: [telescope], to: [src]}
"""


def shortest_rtt_ms(source: str, destination: str) -> float:
    """RTT of the shortest path between two sites over the stored links, storage sites not transit."""
    links = list(Link.objects.select_related("a_end", "b_end"))
    graph = build_graph(
        LinkEdge(lk.name, lk.a_end.name, lk.b_end.name, lk.capacity_bps, lk.rtt_ms, lk.is_up) for lk in links
    )
    storage = Site.objects.filter(kind__in=STORAGE_KINDS).values_list("name", flat=True)
    (hops,) = shortest_paths(graph, source, destination, avoid_sites=list(storage))
    rtt = {lk.name: lk.rtt_ms for lk in links}
    return sum(rtt[name] for name in hops)


def test_reference_topology_matches_the_measured_anchors(reference_topology):
    assert Telescope.objects.count() == 2
    assert RegionalCentre.objects.filter(is_distribution_centre=False).count() >= 10
    assert set(RegionalCentre.objects.filter(is_distribution_centre=True).values_list("name", flat=True)) == {
        "LondonDC",
        "SingaporeDC",
    }
    assert reference_topology.warnings == []
    regions = set(Site.objects.filter(kind="src").values_list("region", flat=True))
    assert {"europe", "oceania", "africa", "north_america", "asia"} <= regions
    rtt = {p.name: p.rtt_ms for p in NetworkPath.objects.all()}
    assert rtt["Paris--Canberra--pacific"] == pytest.approx(303.0)
    assert rtt["UKSRC--FRSRC"] == pytest.approx(14.6)  # Jodrell Bank-Paris 14.1 ms plus the campus links
    # The anchors the file's header claims, between the sites they were measured at, over the same
    # shortest-RTT computation the stored paths use (MRO is SKA1-Low's site, Jodrell Bank is UKSRC's).
    assert shortest_rtt_ms("SKA1-Low", "Canberra") == pytest.approx(56.5)
    assert shortest_rtt_ms("London", "Canberra") == pytest.approx(259.0)
    assert shortest_rtt_ms("London", "Paris") == pytest.approx(7.5)
    assert shortest_rtt_ms("UKSRC", "Paris") == pytest.approx(14.1)
    # Every telescope reaches every SRC and distribution centre.
    for telescope in ("SKA1-Low", "SKA1-Mid"):
        reached = set(
            NetworkPath.objects.filter(source__name=telescope).values_list("destination__name", flat=True)
        )
        assert reached == set(RegionalCentre.objects.values_list("name", flat=True))


def test_paths_store_their_bottleneck_and_rtt(reference_topology):
    path = NetworkPath.objects.get(name="SKA1-Low--UKSRC")
    links = path.ordered_links()
    assert path.rtt_ms == pytest.approx(sum(lk.rtt_ms for lk in links))
    assert path.capacity_bps == min(lk.capacity_bps for lk in links)
    assert links[0].name == "low-access"


def test_import_is_idempotent():
    first = import_topology(text=SMALL)
    second = import_topology(text=SMALL)
    assert first.created["link"] == 2
    assert second.created == {} and second.updated["link"] == 2
    assert Link.objects.count() == 2 and NetworkPath.objects.count() == 1


def test_export_then_import_reproduces_the_database(reference_topology):
    exported = export_topology()
    snapshot = sorted(NetworkPath.objects.values_list("name", "rtt_ms", "capacity_bps"))
    summary = import_topology(text=exported)
    assert summary.created == {}
    assert sorted(NetworkPath.objects.values_list("name", "rtt_ms", "capacity_bps")) == snapshot
    assert export_topology() == exported


@pytest.mark.parametrize(
    ("mutation", "line", "field", "message"),
    [
        (("capacity: 100G, rtt_ms: 7}", "capacity: -5G, rtt_ms: 7}"), 11, "links[0].capacity", "not a rate"),
        (
            ("capacity: 100G, rtt_ms: 7}", "capacity: 0, rtt_ms: 7}"),
            11,
            "links[0].capacity",
            "greater than or equal to 1",
        ),
        (("rtt_ms: 0.5,", "rtt_ms: 0,"), 12, "links[1].rtt_ms", "greater than or equal"),
        (
            ("b: Perth, capacity: 100G, rtt_ms: 7", "b: Nowhere, capacity: 100G, rtt_ms: 7"),
            11,
            "links[0].b",
            "no site named 'Nowhere'",
        ),
        (("vrfs: [global]", "vrfs: [missing]"), 12, "links[1].vrfs", "no VRF named 'missing'"),
        (
            ("latitude: -26.7", "latitude: -126.7"),
            5,
            "telescopes[0].latitude",
            "greater than or equal to -90",
        ),
        (("- {name: AUSRC,", "- {nmae: AUSRC,"), 7, "regional_centres[0].nmae", "unknown key"),
        (("from: [telescope]", "from: [quasar]"), 15, "paths.compute[0].from", "unknown site kind"),
    ],
)
def test_bad_file_names_line_and_field_and_writes_nothing(mutation, line, field, message):
    old, new = mutation
    assert old in SMALL
    with pytest.raises(TopologyFileError) as info:
        import_topology(text=SMALL.replace(old, new, 1))
    assert info.value.line == line
    assert info.value.field == field
    assert message in info.value.reason
    assert Site.objects.count() == 0 and Link.objects.count() == 0


def test_declared_path_through_a_missing_link_is_rejected():
    text = (
        SMALL + "  declared:\n    - {name: p, source: SKA1-Low, destination: AUSRC, links: [access, ghost]}\n"
    )
    with pytest.raises(TopologyFileError, match="no link named 'ghost'") as info:
        import_topology(text=text)
    assert info.value.line == 17
    assert StorageEndpoint.objects.count() == 0 and Site.objects.count() == 0


def test_declared_path_that_is_not_a_walk_is_rejected():
    text = SMALL + "  declared:\n    - {name: p, source: SKA1-Low, destination: AUSRC, links: [campus]}\n"
    with pytest.raises(TopologyFileError, match="does not start at SKA1-Low"):
        import_topology(text=text)


def test_unknown_section_and_version():
    with pytest.raises(TopologyFileError, match="unknown section 'routers'"):
        import_topology(text="version: 1\nrouters: []\n")
    with pytest.raises(TopologyFileError, match="version 1"):
        import_topology(text="version: 2\n")
    with pytest.raises(TopologyFileError, match="mapping"):
        import_topology(text="- a\n- b\n")


def test_site_cannot_change_kind():
    import_topology(text=SMALL)
    # AUSRC, a regional centre in the database, comes back as a point of presence.
    centre = (
        "regional_centres:\n"
        "  - {name: AUSRC, region: oceania, country: AU, latitude: -31.9, longitude: 115.8}\n"
    )
    text = SMALL.replace(centre, "").replace(
        "points_of_presence:\n  - {name: Perth", "points_of_presence:\n  - {name: AUSRC"
    )
    assert "regional_centres" not in text
    with pytest.raises(TopologyFileError, match="already exists as a SKA Regional Centre"):
        import_topology(text=text)


def test_a_file_nested_thousands_deep_is_refused_naming_why(db):
    from topology.models import Site
    from topology.services.importer import import_topology
    from topology.yamlio import TopologyFileError

    with pytest.raises(TopologyFileError, match="nested too deeply"):
        import_topology(text="[" * 5000 + "]" * 5000)
    assert Site.objects.count() == 0
