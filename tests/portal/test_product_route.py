"""The map highlights the path a product's copies take (``/topology/map/?product=<id>``): the legs come from
the product's transfers and planned copies, each along the topology's path between its two sites; a product
the user may not see is a 404."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.utils import timezone

from projects.models import Project
from replicas.choices import ReplicaState
from replicas.models import Replica
from replicas.services import FileSpec, register_product
from schedulers.services import push_product
from topology.models import NetworkPath, RegionalCentre, StorageEndpoint, Telescope

pytestmark = pytest.mark.django_db


def _path_links(source: str, destination: str) -> list[str]:
    path = NetworkPath.objects.filter(source__name=source, destination__name=destination).order_by(
        "-is_computed", "rtt_ms", "id"
    )[0]
    return [lk.name for lk in path.ordered_links()]


def _route(client, product) -> dict:  # type: ignore[no-untyped-def]
    page = client.get("/topology/map/", {"product": product.pk})
    assert page.status_code == 200
    return page.context["route"] | {"html": page.content.decode()}


def test_the_map_gets_the_legs_of_a_products_copies_from_the_platform(client, scientist, reference_topology):
    product = register_product(
        scope="ska",
        name="obs-route",
        telescope=Telescope.objects.get(name="SKA1-Low"),
        files=[FileSpec("obs-route.part0.ms", 10**9, "0cc737eb")],
    )
    push_product(product=product)
    first = product.replicas.get(state=ReplicaState.COPYING)
    first_site = first.endpoint.site.name
    # A second copy from the first (planned: no transfer yet), and a relayed copy through SingaporeDC.
    other = StorageEndpoint.objects.filter(role="disk").exclude(site=first.endpoint.site).order_by("name")
    second = Replica.objects.create(
        product=product, endpoint=other[0], state=ReplicaState.PLANNED, upstream=first
    )
    relayed = Replica.objects.create(
        product=product,
        endpoint=other[1],
        state=ReplicaState.PLANNED,
        via=RegionalCentre.objects.get(name="SingaporeDC"),
    )
    client.force_login(scientist)
    route = _route(client, product)
    legs = {(g["source"], g["destination"]): g for g in route["legs"]}
    second_site, relayed_site = second.endpoint.site.name, relayed.endpoint.site.name
    assert set(legs) == {
        ("SKA1-Low", first_site),
        (first_site, second_site),
        ("SKA1-Low", "SingaporeDC"),
        ("SingaporeDC", relayed_site),
    }
    pushed = legs[("SKA1-Low", first_site)]
    assert pushed["basis"] == "transfers" and pushed["states"] == {"SUBMITTED": 1}
    assert pushed["copies"] == [first.endpoint.name]
    assert legs[(first_site, second_site)]["basis"] == "plan"
    assert legs[(first_site, second_site)]["copies"] == [second.endpoint.name]
    assert legs[("SingaporeDC", relayed_site)]["copies"] == [relayed.endpoint.name]
    assert legs[("SKA1-Low", "SingaporeDC")]["copies"] == []
    for (source, destination), leg in legs.items():
        assert leg["link_names"] == _path_links(source, destination) and leg["link_names"]
    # The links and sites to highlight are the union of the legs'.
    assert set(route["links"]) == {i for g in route["legs"] for i in g["links"]}
    assert {s for g in route["legs"] for s in (g["source_id"], g["destination_id"])} == set(route["sites"])
    # The page hands the same data to the map's script, and lists the legs.
    html = route["html"]
    assert 'id="product-route"' in html and f"SKA1-Low → {first_site}" in html
    embedded = html.split('<script id="product-route" type="application/json">')[1].split("</script>")[0]
    assert json.loads(embedded)["links"] == route["links"]
    # The product's page links to it.
    page = client.get(f"/replicas/products/{product.pk}/").content.decode()
    assert f"/topology/map/?product={product.pk}" in page


def test_a_product_with_nothing_moving_has_no_leg_and_the_plain_map_has_no_route(
    client, scientist, reference_topology
):
    product = register_product(
        scope="ska",
        name="obs-still",
        telescope=Telescope.objects.get(name="SKA1-Mid"),
        files=[FileSpec("a.ms", 1000, "0cc737eb")],
    )
    client.force_login(scientist)
    route = _route(client, product)
    assert route["legs"] == [] and route["links"] == [] and "No copy of it has left its SDP" in route["html"]
    plain = client.get("/topology/map/")
    assert plain.context["route"] is None and b"product-route" not in plain.content


def test_another_projects_proprietary_product_is_a_404_on_the_map(client, scientist, reference_topology):
    project = Project.objects.create(code="AA09", title="Secret", proprietary_days=365)
    product = register_product(
        scope="ska",
        name="obs-secret",
        telescope=Telescope.objects.get(name="SKA1-Mid"),
        files=[FileSpec("a.ms", 1000, "0cc737eb")],
        project=project,
    )
    assert product.proprietary_until is not None
    assert product.proprietary_until > timezone.now() + dt.timedelta(days=300)
    client.force_login(scientist)
    assert client.get("/topology/map/", {"product": product.pk}).status_code == 404
    assert client.get("/topology/map/", {"product": "x1"}).status_code == 404
    assert client.get("/topology/map/", {"product": 999999}).status_code == 404
