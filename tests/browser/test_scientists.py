"""Scientists' pages in Debian's Chromium: the map highlighting the path of a product's copies, and the Rules
page (make a rule, see its copies and their predicted arrival, remove it; a bad rule names its field)."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from replicas.choices import ReplicaState
from replicas.models import Replica
from replicas.services import FileSpec, register_product
from schedulers.services import push_product
from topology.models import NetworkPath, StorageEndpoint, Telescope

from .conftest import wait

pytestmark = pytest.mark.django_db(transaction=True)


def carrier_links(source: str, destination: str) -> set[str]:
    """The links of the path that carries the flows between two sites (computed first, lowest RTT)."""
    path = NetworkPath.objects.filter(source__name=source, destination__name=destination).order_by(
        "-is_computed", "rtt_ms", "id"
    )[0]
    return {lk.name for lk in path.ordered_links()}


def route_links(browser) -> set[str]:  # type: ignore[no-untyped-def]
    return {
        e.get_attribute("data-link-name")
        for e in browser.find_elements(By.CSS_SELECTOR, "#network-map path.link.route")
    }


def open_route_from_product_page(browser, live_server, product) -> None:  # type: ignore[no-untyped-def]
    browser.get(f"{live_server.url}/replicas/products/{product.pk}/")
    browser.find_element(By.ID, "product-map").click()
    wait(browser, "#network-map[data-ready='1']")


def test_the_map_highlights_the_path_of_a_products_copies(browser, live_server, login, users, topology):
    product = register_product(
        scope="ska",
        name="obs-map-route",
        telescope=Telescope.objects.get(name="SKA1-Low"),
        files=[FileSpec("obs-map-route.part0.ms", 10**9, "0cc737eb")],
    )
    push_product(product=product)
    first = product.replicas.get(state=ReplicaState.COPYING)
    other = StorageEndpoint.objects.filter(role="disk").exclude(site=first.endpoint.site).order_by("name")[0]
    Replica.objects.create(product=product, endpoint=other, state=ReplicaState.PLANNED, upstream=first)
    login("scientist")
    open_route_from_product_page(browser, live_server, product)
    a, b = first.endpoint.site.name, other.site.name
    expected = carrier_links("SKA1-Low", a) | carrier_links(a, b)
    assert route_links(browser) == expected and len(expected) >= 2
    routed_sites = {
        e.get_attribute("data-site-name")
        for e in browser.find_elements(By.CSS_SELECTOR, "#network-map g.site.route")
    }
    assert routed_sites == {"SKA1-Low", a, b}
    legs = browser.find_element(By.ID, "route-legs").text
    assert f"SKA1-Low → {a}" in legs and f"{a} → {b}" in legs and "(planned)" in legs
    # A click on a site shows its details; the route stays highlighted, and after the 10 s refresh too.
    browser.find_element(By.CSS_SELECTOR, "g.site[data-site-name='SKA1-Low'] circle").click()
    WebDriverWait(browser, 15).until(
        lambda d: d.find_element(By.CSS_SELECTOR, "#details h2").text == "SKA1-Low"
    )
    browser.execute_script("document.getElementById('map-updated').textContent = ''")
    WebDriverWait(browser, 20).until(
        lambda d: d.find_element(By.ID, "map-updated").text.startswith("updated")
    )
    assert route_links(browser) == expected
    # The plain map highlights nothing.
    browser.get(live_server.url + "/topology/map/")
    wait(browser, "#network-map[data-ready='1']")
    assert route_links(browser) == set()
