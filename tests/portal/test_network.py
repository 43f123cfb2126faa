"""The map's and flows' JSON: sites at their coordinates, and load by the documented rule."""

import pytest

from operations import selectors
from topology.models import Link, NetworkPath, Site, StorageEndpoint
from topology.physics import tcp_ceiling_bps

from .helpers import finished_file, job_of, pushed_product, start

pytestmark = pytest.mark.django_db


def _carrier(product):
    replica = product.replicas.exclude(endpoint=product.source).get()
    return NetworkPath.objects.filter(
        source=product.telescope_id, destination=replica.endpoint.site_id, is_computed=True
    ).get(), replica.endpoint


def test_network_lists_sites_at_their_coordinates_and_links(client, scientist, reference_topology):
    client.force_login(scientist)
    data = client.get("/api/operations/network/").json()
    sites = {s["name"]: s for s in data["sites"]}
    assert sites["SKA1-Low"]["kind"] == "telescope" and sites["SKA1-Low"]["longitude"] == 116.63
    assert sites["UKSRC"]["kind"] == "src" and sites["LondonDC"]["kind"] == "distribution_centre"
    assert sites["Perth"]["kind"] == "pop"
    assert len(data["links"]) == 40 and all(lk["level"] == "idle" for lk in data["links"])
    assert len(data["paths"]) == NetworkPath.objects.count()


def test_json_needs_a_login(client, reference_topology):
    for url in ("/api/operations/network/", "/api/operations/flows/", "/api/operations/audit-events/"):
        assert client.get(url).status_code in (401, 403)


def test_active_flows_count_at_the_measured_rate_of_their_storage_pair(client, scientist, reference_topology):
    product = pushed_product("obs-load")
    path, destination = _carrier(product)
    start(job_of(product))
    # 1 GB in 8 s on the same storage pair an hour ago at most: 1 Gbit/s per active file.
    finished_file(product.source, destination, seconds=8.0, nbytes=10**9)
    loads = selectors.path_loads()
    assert loads[path.pk].active == 2 and loads[path.pk].load_bps == pytest.approx(2e9)

    client.force_login(scientist)
    detail = client.get(f"/api/operations/paths/{path.pk}/").json()
    assert detail["active"] == 2 and detail["load_bps"] == pytest.approx(2e9)
    assert detail["per_flow_ceiling_bps"] == pytest.approx(tcp_ceiling_bps(2**30, path.rtt_ms))
    assert [h["bytes"] for h in detail["history"]] == [10**9]
    assert len(detail["flows"]) == 2 and detail["flows"][0]["product"] == product.did

    access = Link.objects.get(name="mid-access")
    links = {lk["name"]: lk for lk in client.get("/api/operations/network/").json()["links"]}
    assert links["mid-access"]["load_bps"] == pytest.approx(2e9)
    assert links["mid-access"]["utilisation"] == pytest.approx(2e9 / access.capacity_bps)
    assert links["mid-access"]["level"] == "low" and links["low-access"]["level"] == "idle"


def test_unmeasured_flows_count_at_the_per_flow_ceiling_capped_by_capacity(reference_topology):
    product = pushed_product("obs-ceiling", files=8)
    path, _ = _carrier(product)
    start(job_of(product))
    expected = min(8 * min(tcp_ceiling_bps(2**30, path.rtt_ms), path.capacity_bps), path.capacity_bps)
    assert selectors.path_loads()[path.pk].load_bps == pytest.approx(expected)
    assert selectors.level(expected / path.capacity_bps) in ("busy", "congested")


def test_queued_files_are_counted_but_carry_no_load(reference_topology):
    product = pushed_product("obs-queued")
    path, _ = _carrier(product)
    load = selectors.path_loads()[path.pk]
    assert (load.active, load.queued, load.load_bps) == (0, 2, 0.0)


def test_site_and_link_details(client, scientist, reference_topology):
    client.force_login(scientist)
    mid = Site.objects.get(name="SKA1-Mid")
    site = client.get(f"/api/operations/sites/{mid.pk}/").json()
    assert site["name"] == "SKA1-Mid" and site["storage"][0]["name"] == "SKA1-MID_SDP"
    assert {lk["name"] for lk in site["links"]} == {"mid-access"}
    assert any(p["destination"] == "UKSRC" for p in site["paths"])
    link = client.get(f"/api/operations/links/{Link.objects.get(name='capetown-london').pk}/").json()
    assert link["a"] == "CapeTown" and link["rtt_ms"] == 145.0
    assert any(p["source"] == "SKA1-Mid" and p["destination"] == "UKSRC" for p in link["paths"])


def test_flows_snapshot(client, scientist, reference_topology):
    product = pushed_product("obs-flows")
    path, _ = _carrier(product)
    start(job_of(product))
    client.force_login(scientist)
    snap = client.get("/api/operations/flows/").json()
    assert [p["name"] for p in snap["paths"]] == [path.name]
    assert {lk["name"] for lk in snap["access_links"]} == {"low-access", "mid-access"}
    assert len(snap["active"]) == 2 and snap["queue"] == []


def test_a_path_maps_to_root_and_davs_links_between_its_storage(reference_topology):
    path = NetworkPath.objects.get(source__name="SKA1-Mid", destination__name="UKSRC", is_computed=True)
    sdp, uk = StorageEndpoint.objects.get(name="SKA1-MID_SDP"), StorageEndpoint.objects.get(name="UKSRC_DISK")
    assert selectors.path_storage_links(path) == [
        (f"root://{sdp.hostname}:{sdp.root_port}", f"root://{uk.hostname}:{uk.root_port}"),
        (f"davs://{sdp.hostname}:{sdp.http_port}", f"davs://{uk.hostname}:{uk.http_port}"),
    ]
