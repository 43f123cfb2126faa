"""Portal pages: login required, same filters as the API, no N+1 queries on lists."""

import pytest
from django.urls import reverse

from replicas.services import FileSpec, register_product
from topology.models import Telescope

pytestmark = pytest.mark.django_db

PAGES = [
    "home",
    "topology:sites",
    "topology:links",
    "topology:paths",
    "topology:storage",
    "replicas:products",
    "transfers:files",
    "topology:map",
    "transfers:flows",
    "operations:audit",
    "operations:policies",
]


@pytest.mark.parametrize("name", PAGES)
def test_anonymous_users_are_sent_to_login(client, name):
    response = client.get(reverse(name))
    assert response.status_code == 302 and response["Location"].startswith("/login/")


@pytest.mark.parametrize("name", PAGES)
def test_pages_render_for_a_scientist(client, scientist, reference_topology, name):
    client.force_login(scientist)
    response = client.get(reverse(name))
    assert response.status_code == 200
    assert b"SRCNet" in response.content


def test_paths_page_filters_like_the_api(client, scientist, reference_topology):
    client.force_login(scientist)
    page = client.get(
        reverse("topology:paths"), {"source": "SKA1-Mid", "destination": "UKSRC"}
    ).content.decode()
    assert "1 result" in page
    assert "mid-access → capetown-london → uksrc-campus" in page


def test_product_page_shows_its_replicas(client, scientist, reference_topology):
    product = register_product(
        scope="ska",
        name="obs-page",
        telescope=Telescope.objects.get(name="SKA1-Mid"),
        files=[FileSpec("a.ms", 10, "0cc737eb")],
    )
    client.force_login(scientist)
    page = client.get(reverse("replicas:product", args=[product.pk])).content.decode()
    assert "ska:obs-page" in page and "SKA1-MID_SDP" in page and "written by the SDP" in page


def test_list_endpoints_do_not_query_per_row(
    operator_client, reference_topology, django_assert_max_num_queries
):
    # 242 computed paths with their hops: a fixed number of queries, not one per path.
    with django_assert_max_num_queries(8):
        assert len(operator_client.get("/api/topology/paths/", {"limit": 300}).json()["results"]) == 243
    with django_assert_max_num_queries(8):
        assert operator_client.get("/api/topology/links/", {"limit": 100}).json()["count"] == 40
