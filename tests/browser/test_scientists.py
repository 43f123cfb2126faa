"""Scientists' pages in Debian's Chromium: the map highlighting the path of a product's copies, and the Rules
page (make a rule, see its copies and their predicted arrival, remove it; a bad rule names its field)."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from replicas.choices import ReplicaState
from replicas.models import Replica
from replicas.services import FileSpec, register_product
from schedulers.loop import push_cycle
from schedulers.services import push_product
from tests.conftest import drive_push_loop
from tests.integration.conftest import bound_topology, spectral_cube_at_sdp, unique  # noqa: F401 (the fixture)
from topology.models import NetworkPath, StorageEndpoint, Telescope

from .conftest import details_heading, press_and_wait_for_the_answer, wait

MIB = 1024 * 1024

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
    WebDriverWait(browser, 15).until(lambda d: details_heading(d) == "SKA1-Low")
    browser.execute_script("document.getElementById('map-updated').textContent = ''")
    WebDriverWait(browser, 20).until(
        lambda d: d.find_element(By.ID, "map-updated").text.startswith("updated")
    )
    assert route_links(browser) == expected
    # The plain map highlights nothing.
    browser.get(live_server.url + "/topology/map/")
    wait(browser, "#network-map[data-ready='1']")
    assert route_links(browser) == set()


@pytest.mark.integration
def test_a_scientist_asks_for_data_on_the_rules_page_and_watches_it_arrive(  # type: ignore[no-untyped-def]
    browser,
    live_server,
    login,
    users,
    celery_worker,
    bound_topology,  # noqa: F811 (the fixture)
    shoot,
):
    """A real push: the product's files are on the SKA1-Low SDP's XRootD server, the push loop's cycles run
    here and the Celery worker copies them to AUSRC's and UKSRC's XRootD servers."""
    from rules.models import Rule

    sdp = bound_topology["SKA1-LOW_SDP"]
    name = unique("asked")
    product = spectral_cube_at_sdp(sdp, name, (24 * MIB, 8 * MIB + 7), "SB-5150")
    login("scientist")
    browser.get(live_server.url + "/rules/")
    assert "No rules yet." in browser.find_element(By.ID, "rules").text
    # A bad rule: the message on the field it names, nothing made.
    fill_rule(browser, product="ska:no-such-product", srcs="AUSRC, UKSRC", copies=2)
    refused = wait(browser, "#rule-form p.field.invalid")
    assert "Product" in refused.text and "No product 'ska:no-such-product' that you may see." in refused.text
    assert not Rule.objects.exists()
    shoot("rules-refused")
    # The rule: two copies, at AUSRC and UKSRC, of the product still waiting at its SDP.
    fill_rule(browser, product=product.did, srcs="AUSRC, UKSRC", copies=2)
    made = Rule.objects.first()
    assert made is not None, browser.find_element(By.ID, "rule-form").text
    rule = made
    assert f"Rule {rule.pk} made: 1 product(s)." in wait(browser, "ul.messages").text
    row = browser.find_element(By.CSS_SELECTOR, "#rules tbody tr").text
    assert "REPLICATING" in row, row
    # The rule asked for a push cycle as it committed (rules/services.py) and the live worker may have run it
    # before this page was drawn (a whole make test saw it, 2026-11-30): each copy is planned, or already has
    # the arrival that cycle predicted for it.
    first = copy_texts(browser)
    assert set(first) == {"AUSRC_DISK", "UKSRC_DISK"}, first
    for endpoint, text in first.items():
        assert f"{name} @ {endpoint}: " in text, text
        assert ": planned" in text or "predicted 20" in text, text
    # One push cycle plans it: each copy gets its predicted arrival and why not sooner.
    cycle = push_cycle()
    assert not cycle.error, cycle.error
    browser.get(live_server.url + "/rules/")
    copies = copy_texts(browser)
    for endpoint, text in copies.items():
        assert ": available" in text or ("predicted 20" in text and "(" in text), (endpoint, text)
    assert "predicted 20" in copies["UKSRC_DISK"] or ": available" in copies["UKSRC_DISK"]
    shoot("rules")

    def rule_settled() -> bool:
        return all(r.state == "available" for r in rule.replicas.all()) and rule.replicas.count() == 2

    drive_push_loop(rule_settled, timeout=180, what="the rule's copies")
    browser.get(live_server.url + "/rules/")
    assert browser.find_element(By.CSS_SELECTOR, "#rules tbody td.state").text == "OK"
    assert set(copy_texts(browser)) == {"AUSRC_DISK", "UKSRC_DISK"}
    assert all(": available" in t and "predicted" not in t for t in copy_texts(browser).values())
    # Where it went, on the map: SKA1-Low -> AUSRC over the access link, then AUSRC -> UKSRC.
    open_route_from_product_page(browser, live_server, product)
    assert route_links(browser) == carrier_links("SKA1-Low", "AUSRC") | carrier_links("AUSRC", "UKSRC")
    legs = browser.find_element(By.ID, "route-legs").text
    assert "SKA1-Low → AUSRC" in legs and "AUSRC → UKSRC" in legs and "FINISHED" in legs
    shoot("map-product-route")
    # Removed from the Rules page.
    browser.get(live_server.url + "/rules/")
    press_and_wait_for_the_answer(browser, browser.find_element(By.CSS_SELECTOR, "#rules tbody form button"))
    assert f"Rule {rule.pk} removed." in browser.find_element(By.TAG_NAME, "main").text
    assert "No rules yet." in browser.find_element(By.ID, "rules").text and not Rule.objects.exists()


def fill_rule(browser, *, product: str, srcs: str, copies: int) -> None:  # type: ignore[no-untyped-def]
    form = browser.find_element(By.ID, "rule-form")
    for field, value in (("product", product), ("srcs", srcs), ("copies", str(copies)), ("lifetime", "7")):
        box = form.find_element(By.NAME, field)
        box.clear()
        box.send_keys(value)
    press_and_wait_for_the_answer(browser, form.find_element(By.CSS_SELECTOR, "button[type=submit]"))
    wait(browser, "#rule-form")


def copy_texts(browser) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {
        e.get_attribute("data-endpoint"): e.text
        for e in browser.find_elements(By.CSS_SELECTOR, "#rules span.copy")
    }
