"""Topology REST API: CRUD by data, filtering, auth, bad payloads, import/export."""

import pytest

from topology.models import Link, NetworkPath, Site

pytestmark = pytest.mark.django_db

# One row per endpoint: (url, payload to create, field to update with its new value).
CRUD_CASES = [
    (
        "/api/topology/vrfs/",
        {"name": "vrf-xx", "scope": "national", "parent": "geant"},
        ("description", "new"),
    ),
    (
        "/api/topology/points-of-presence/",
        {
            "name": "Darwin",
            "region": "oceania",
            "country": "AU",
            "latitude": -12.4,
            "longitude": 130.8,
            "operator": "AARNet",
        },
        ("operator", "Telstra"),
    ),
    (
        "/api/topology/regional-centres/",
        {
            "name": "KRSRC",
            "region": "asia",
            "country": "KR",
            "latitude": 37.5,
            "longitude": 127.0,
            "share_weight": 1.0,
        },
        ("share_weight", 3.0),
    ),
    (
        "/api/topology/telescopes/",
        {"name": "SKA2-Low", "region": "oceania", "country": "AU", "latitude": -26.0, "longitude": 116.0},
        ("sdp_buffer_bytes", 10**15),
    ),
    (
        "/api/topology/storage-endpoints/",
        {"name": "UKSRC_TAPE", "site": "UKSRC", "role": "disk", "hostname": "tape.uk.example.org"},
        ("http_port", 8443),
    ),
    (
        "/api/topology/dtns/",
        {"name": "dtn2.uksrc", "site": "UKSRC", "hostname": "dtn2.example.org"},
        ("tuning_profile", "dtn-56ms"),
    ),
    (
        "/api/topology/links/",
        {
            "name": "london-dublin",
            "a_end": "London",
            "b_end": "UKSRC",
            "capacity_bps": 10**11,
            "rtt_ms": 9.5,
            "vrfs": ["geant"],
        },
        ("rtt_ms", 10.5),
    ),
]


@pytest.mark.parametrize(("url", "payload", "update"), CRUD_CASES)
def test_crud(operator_client, reference_topology, url, payload, update):
    created = operator_client.post(url, payload, format="json")
    assert created.status_code == 201, created.json()
    item = created.json()
    for key, value in payload.items():
        assert item[key] == value
    detail = f"{url}{item['id']}/"
    field, value = update
    changed = operator_client.patch(detail, {field: value}, format="json")
    assert changed.status_code == 200, changed.json()
    assert operator_client.get(detail).json()[field] == value
    assert operator_client.delete(detail).status_code == 204
    assert operator_client.get(detail).status_code == 404


@pytest.mark.parametrize(
    ("url", "payload", "field"),
    [
        (
            "/api/topology/links/",
            {"name": "x", "a_end": "London", "b_end": "Paris", "capacity_bps": -1, "rtt_ms": 3},
            "capacity_bps",
        ),
        (
            "/api/topology/links/",
            {"name": "x", "a_end": "London", "b_end": "London", "capacity_bps": 1, "rtt_ms": 3},
            "b_end",
        ),
        (
            "/api/topology/links/",
            {"name": "x", "a_end": "London", "b_end": "Atlantis", "capacity_bps": 1, "rtt_ms": 3},
            "b_end",
        ),
        (
            "/api/topology/links/",
            {"name": "x", "a_end": "London", "b_end": "Paris", "capacity_bps": 1, "rtt_ms": 0},
            "rtt_ms",
        ),
        ("/api/topology/storage-endpoints/", {"name": "X", "site": "London", "hostname": "h"}, "site"),
        (
            "/api/topology/storage-endpoints/",
            {"name": "X", "site": "UKSRC", "hostname": "h", "prefix": "x"},
            "prefix",
        ),
        (
            "/api/topology/regional-centres/",
            {"name": "UKSRC", "region": "europe", "country": "GB", "latitude": 0, "longitude": 0},
            "name",
        ),
        ("/api/topology/vrfs/", {"name": "v", "scope": "global", "parent": "geant"}, "parent"),
        (
            "/api/topology/paths/",
            {"name": "p", "source": "SKA1-Low", "destination": "UKSRC", "links": ["low-access", "ghost"]},
            "links",
        ),
        (
            "/api/topology/paths/",
            {"name": "p", "source": "SKA1-Low", "destination": "UKSRC", "links": ["uksrc-campus"]},
            "links",
        ),
    ],
)
def test_bad_payloads_get_400_naming_the_field_and_write_nothing(
    operator_client, reference_topology, url, payload, field
):
    before = (Link.objects.count(), Site.objects.count(), NetworkPath.objects.count())
    response = operator_client.post(url, payload, format="json")
    assert response.status_code == 400
    assert field in response.json(), response.json()
    assert (Link.objects.count(), Site.objects.count(), NetworkPath.objects.count()) == before


def test_declared_path_via_api_derives_its_metrics(operator_client, reference_topology):
    links = ["low-access", "perth-singapore", "singapore-london", "uksrc-campus"]
    response = operator_client.post(
        "/api/topology/paths/",
        {"name": "low-uk-declared", "source": "SKA1-Low", "destination": "UKSRC", "links": links},
        format="json",
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["hops"] == links
    assert body["rtt_ms"] == pytest.approx(7 + 49.5 + 160 + 6.6)
    assert body["capacity_bps"] == 100 * 10**9
    assert body["is_computed"] is False
    assert body["streams_to_fill"] == 3  # 100G / (1 GiB / 223.1 ms = 38.5 Gbit/s)


def test_anonymous_sees_nothing(client, reference_topology):
    for url in (
        "/api/",
        "/api/topology/sites/",
        "/api/topology/paths/",
        "/api/replicas/products/",
        "/api/transfers/jobs/",
    ):
        assert client.get(url).status_code in (401, 403), url


def test_scientist_reads_but_cannot_write(scientist_client, reference_topology):
    assert scientist_client.get("/api/topology/links/").status_code == 200
    response = scientist_client.post(
        "/api/topology/links/",
        {"name": "x", "a_end": "London", "b_end": "Paris", "capacity_bps": 1, "rtt_ms": 1},
        format="json",
    )
    assert response.status_code == 403
    assert (
        scientist_client.post(
            "/api/topology/import/", "version: 1\n", content_type="application/x-yaml"
        ).status_code
        == 403
    )


def test_filters(operator_client, reference_topology):
    paths = operator_client.get(
        "/api/topology/paths/", {"source": "SKA1-Low", "destination_kind": "src", "limit": 100}
    ).json()
    assert paths["count"] == 14
    assert {p["source"] for p in paths["results"]} == {"SKA1-Low"}
    uk = next(p for p in paths["results"] if p["destination"] == "UKSRC")
    assert uk["rtt_ms"] == pytest.approx(223.1)
    assert uk["per_flow_ceiling_bps"] == pytest.approx(2**30 * 8 / 0.2231)
    assert operator_client.get("/api/topology/sites/", {"kind": "telescope"}).json()["count"] == 2
    links = operator_client.get("/api/topology/links/", {"kind": "submarine", "limit": 100}).json()
    assert links["count"] == 9 and all(lk["kind"] == "submarine" for lk in links["results"])
    through = operator_client.get("/api/topology/paths/", {"link": "capetown-london", "limit": 500}).json()
    assert through["count"] > 0
    assert all("capetown-london" in p["hops"] for p in through["results"])


def test_pagination(operator_client, reference_topology):
    page = operator_client.get("/api/topology/paths/", {"limit": 10, "offset": 5}).json()
    assert len(page["results"]) == 10 and page["count"] == NetworkPath.objects.count()
    assert "offset=15" in page["next"]


def test_import_and_export_over_the_api(operator_client, reference_topology):
    exported = operator_client.get("/api/topology/export/")
    assert exported.status_code == 200 and exported["Content-Type"].startswith("application/x-yaml")
    text = exported.content.decode()
    assert "SKA1-Low" in text
    response = operator_client.post("/api/topology/import/", text, content_type="application/x-yaml")
    assert response.status_code == 200, response.content
    assert response.json()["created"] == {}


def test_bad_import_gets_400_with_line_and_field(operator_client):
    bad = (
        "version: 1\npoints_of_presence:\n"
        "  - {name: P, region: europe, country: GB, latitude: 999, longitude: 0}\n"
    )
    response = operator_client.post("/api/topology/import/", bad, content_type="application/x-yaml")
    assert response.status_code == 400
    body = response.json()
    assert body["line"] == 3 and body["field"] == "points_of_presence[0].latitude"
    assert Site.objects.count() == 0
    empty = operator_client.post("/api/topology/import/", "", content_type="application/x-yaml")
    assert empty.status_code == 400 and empty.json()["field"] == "body"
    # The service keeps serving after bad input.
    assert operator_client.get("/api/topology/sites/").status_code == 200


def test_openapi_schema_is_served(operator_client):
    response = operator_client.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    schema = response.json()
    assert "/api/topology/paths/" in schema["paths"]
    assert "/api/replicas/products/{id}/push/" in schema["paths"]


@pytest.mark.parametrize(
    ("host", "refused"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("localhost", True),
        ("dtn.localhost", True),
        ("169.254.169.254", True),  # link-local: a cloud's metadata service
        ("0.0.0.0", True),
        ("224.0.0.1", True),
        ("192.0.2.10", False),
        ("dtn1.uksrc.example.org", False),
    ],
)
def test_a_deployment_refuses_storage_on_this_machine_or_its_link(  # type: ignore[no-untyped-def]
    operator_client, reference_topology, settings, host, refused
):
    from topology.models import StorageEndpoint

    # As deployed: the switch only the local network's own processes turn on (localnet.stack.service_env).
    settings.SRCNET_ALLOW_LOCAL_STORAGE = False
    body = {"name": "UK_EXTRA", "site": "UKSRC", "role": "disk", "hostname": host}
    made = operator_client.post("/api/topology/storage-endpoints/", body, format="json")
    if refused:
        assert made.status_code == 400 and "hostname" in made.json(), made.content
        assert "not a storage site a deployment can reach" in made.json()["hostname"][0]
        assert not StorageEndpoint.objects.filter(name="UK_EXTRA").exists()
    else:
        assert made.status_code == 201, made.content
    # Moving an existing endpoint there is refused the same way.
    endpoint = StorageEndpoint.objects.get(name="UKSRC_DISK")
    moved = operator_client.patch(
        f"/api/topology/storage-endpoints/{endpoint.pk}/", {"hostname": host}, format="json"
    )
    assert moved.status_code == (400 if refused else 200), moved.content
    endpoint.refresh_from_db()
    assert (endpoint.hostname == host) is not refused


def test_the_local_network_allows_its_loopback_sites(operator_client, reference_topology, settings):  # type: ignore[no-untyped-def]
    settings.SRCNET_ALLOW_LOCAL_STORAGE = True
    body = {"name": "UK_EXTRA", "site": "UKSRC", "role": "disk", "hostname": "127.0.0.1"}
    assert operator_client.post("/api/topology/storage-endpoints/", body, format="json").status_code == 201


def test_a_deployment_refuses_mock_storage_naming_the_setting(operator_client, reference_topology, settings):  # type: ignore[no-untyped-def]
    """A mock endpoint (gfal2's mock plugin: copies that move no bytes) is refused, by creation or by a change
    of an existing endpoint, unless SRCNET_MOCK_STORAGE is on (the load benchmark and its tests)."""
    from topology.models import StorageEndpoint

    settings.SRCNET_MOCK_STORAGE = False
    body = {"name": "UK_MOCK", "site": "UKSRC", "role": "disk", "hostname": "mock.uksrc.example.org"}
    made = operator_client.post(
        "/api/topology/storage-endpoints/", {**body, "tpc_scheme": "mock"}, format="json"
    )
    assert made.status_code == 400 and "SRCNET_MOCK_STORAGE" in made.json()["tpc_scheme"][0], made.content
    assert not StorageEndpoint.objects.filter(name="UK_MOCK").exists()
    endpoint = StorageEndpoint.objects.get(name="UKSRC_DISK")
    changed = operator_client.patch(
        f"/api/topology/storage-endpoints/{endpoint.pk}/", {"tpc_scheme": "mock"}, format="json"
    )
    assert changed.status_code == 400 and "tpc_scheme" in changed.json(), changed.content
    endpoint.refresh_from_db()
    assert endpoint.tpc_scheme == "davs"

    settings.SRCNET_MOCK_STORAGE = True  # the benchmark's own platform
    made = operator_client.post(
        "/api/topology/storage-endpoints/", {**body, "tpc_scheme": "mock"}, format="json"
    )
    assert made.status_code == 201, made.content
    assert (
        StorageEndpoint.objects.get(name="UK_MOCK")
        .tpc_url("a/b")
        .startswith("mock://mock.uksrc.example.org:443/srcnet/a/b")
    )
