"""The portal in a real browser: the map draws the network and answers clicks, a product's routing shows
its replicas, the flows chart updates without a reload, an operator's action lands in the audit trail,
and a scientist can do none of it."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.actions.action_builder import ActionBuilder
from selenium.webdriver.common.actions.wheel_input import ScrollOrigin
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from operations.models import AuditEvent
from replicas.choices import ReplicaState
from replicas.models import DataProduct
from topology.models import Link, NetworkPath, Site
from transfers.choices import FileState, JobState
from transfers.models import LinkPause, TransferFile, TransferJob

from ..factories import transfer_file
from .conftest import details_heading, press_and_wait_for_the_answer, wait

pytestmark = pytest.mark.django_db(transaction=True)


def _copies(source: str, dest: str, *, active: int, history_gbps: list[float], product: str) -> TransferJob:
    """Copies between two endpoints as the executor leaves them: some finished (at the given rates, for
    the measured history), ``active`` still running."""
    now = timezone.now()
    # The product as the flows table shows it: the job's metadata, as its submitter wrote it.
    done = TransferJob.objects.create(state=JobState.FINISHED, metadata={"product": f"{product}-earlier"})
    for i, gbps in enumerate(history_gbps):
        nbytes = int(gbps * 1e9 / 8 * 10)  # ten seconds at that rate
        transfer_file(
            done,
            i,
            source=source,
            destination=dest,
            path=f"ska/old/{i}",
            state=FileState.FINISHED,
            size=nbytes,
            duration_seconds=10.0,
            start_time=now - timedelta(minutes=30 - i, seconds=10),
            finish_time=now - timedelta(minutes=30 - i),
        )
    job = TransferJob.objects.create(state=JobState.ACTIVE, metadata={"product": product})
    for i in range(active):
        transfer_file(
            job,
            i,
            source=source,
            destination=dest,
            path=f"ska/new/{i}",
            state=FileState.ACTIVE,
            size=10**10,
            start_time=now,
            attempts=1,
        )
    return job


@pytest.fixture
def traffic(topology):  # type: ignore[no-untyped-def]
    """SKA1-Mid -> UKSRC at about 60 % of 100 Gbit/s, SKA1-Low -> AUSRC lightly loaded."""
    return {
        "mid": _copies(
            "SKA1-MID_SDP",
            "UKSRC_DISK",
            active=2,
            history_gbps=[22, 27, 31, 25, 30, 28],
            product="ska:obs-mid",
        ),
        "low": _copies(
            "SKA1-LOW_SDP", "AUSRC_DISK", active=1, history_gbps=[9, 11, 10], product="ska:obs-low"
        ),
    }


def _click(browser, css: str) -> None:  # type: ignore[no-untyped-def]
    WebDriverWait(browser, 15).until(lambda b: b.find_element(By.CSS_SELECTOR, css).is_displayed())
    browser.find_element(By.CSS_SELECTOR, css).click()


def _submit(browser, css: str) -> None:  # type: ignore[no-untyped-def]
    """Press a form's button and wait for the answer's page: until then, elements found are the old page's
    and go stale under the test's feet."""
    press_and_wait_for_the_answer(browser, browser.find_element(By.CSS_SELECTOR, css))


def _click_line(browser, css: str) -> None:  # type: ignore[no-untyped-def]
    """Click a drawn link where a person would: on the line, half-way along it (its bounding box's centre is
    usually off the arc)."""
    x, y = browser.execute_script(
        """const p = document.querySelector(arguments[0]);
        const pt = p.getPointAtLength(p.getTotalLength() / 2), m = p.getScreenCTM();
        return [m.a * pt.x + m.c * pt.y + m.e, m.b * pt.x + m.d * pt.y + m.f];""",
        css,
    )
    actions = ActionBuilder(browser)
    actions.pointer_action.move_to_location(int(x), int(y))
    actions.pointer_action.click()
    actions.perform()


def _open_map(browser, live_server, login, user: str) -> None:  # type: ignore[no-untyped-def]
    login(user)
    browser.get(live_server.url + "/topology/map/")
    wait(browser, "#network-map[data-ready='1']")


def _path_link(browser, text: str):  # type: ignore[no-untyped-def]
    """The details panel's link to a path. The panel is re-rendered on every click: elements found before
    may go stale while we look."""
    return WebDriverWait(browser, 15, ignored_exceptions=(StaleElementReferenceException,)).until(
        lambda b: next(
            (a for a in b.find_elements(By.CSS_SELECTOR, "#details a.path-link") if a.text == text), None
        )
    )


def _show_mid_to_uk(browser) -> None:  # type: ignore[no-untyped-def]
    _click(browser, "g.site[data-site-name='SKA1-Mid'] circle")
    WebDriverWait(browser, 15).until(lambda b: details_heading(b) == "SKA1-Mid")
    _path_link(browser, "SKA1-Mid → UKSRC").click()
    WebDriverWait(browser, 15).until(lambda b: details_heading(b) == "SKA1-Mid → UKSRC")


def test_map_draws_every_site_and_link_coloured_by_load(browser, live_server, login, users, traffic, shoot):
    _open_map(browser, live_server, login, "scientist")
    names = {
        g.get_attribute("data-site-name")
        for g in browser.find_elements(By.CSS_SELECTOR, "#network-map g.site")
    }
    assert names == set(Site.objects.values_list("name", flat=True))
    for kind, site in (
        ("telescope", "SKA1-Low"),
        ("telescope", "SKA1-Mid"),
        ("src", "UKSRC"),
        ("src", "AUSRC"),
        ("distribution_centre", "LondonDC"),
        ("pop", "Perth"),
    ):
        element = browser.find_element(By.CSS_SELECTOR, f"g.site[data-site-name='{site}']")
        assert f"kind-{kind}" in element.get_attribute("class")
    assert browser.find_element(By.CSS_SELECTOR, "g.site[data-site-name='UKSRC'] text").text == "UKSRC"
    links = browser.find_elements(By.CSS_SELECTOR, "#network-map path.link")
    assert len(links) == Link.objects.count() == 40
    assert len(browser.find_elements(By.CSS_SELECTOR, "#network-map .land path")) > 100  # the offline world
    level = {lk.get_attribute("data-link-name"): lk.get_attribute("class") for lk in links}
    assert "level-busy" in level["mid-access"] and "level-busy" in level["capetown-london"]
    assert "level-low" in level["low-access"] and "level-idle" in level["sydney-losangeles"]
    shoot("map")
    # Wheel zoom over Europe: the world group scales, the site marks keep their size on screen.
    uk = browser.find_element(By.CSS_SELECTOR, "g.site[data-site-name='UKSRC'] circle")
    before = uk.rect["width"]
    for _ in range(5):
        ActionChains(browser).scroll_from_origin(ScrollOrigin.from_element(uk), 0, -300).perform()
    WebDriverWait(browser, 10).until(
        lambda b: (
            "scale("
            in (b.find_element(By.CSS_SELECTOR, "#network-map g.world").get_attribute("transform") or "")
        )
    )
    assert uk.rect["width"] == pytest.approx(before, rel=0.2)
    shoot("map-zoomed")


def test_clicking_a_site_then_a_path_shows_its_details_and_history(
    browser, live_server, login, users, traffic, shoot
):
    _open_map(browser, live_server, login, "scientist")
    _show_mid_to_uk(browser)
    path = NetworkPath.objects.get(source__name="SKA1-Mid", destination__name="UKSRC", is_computed=True)
    details = browser.find_element(By.ID, "details").text
    assert f"{path.rtt_ms:.1f} ms" in details and "Active flows 2" in details
    assert "mid-access → capetown-london" in details and "ska:obs-mid" in details
    assert browser.find_element(By.ID, "path-ceiling").text.endswith("Gbit/s")
    wait(browser, "#details canvas#path-history")
    assert browser.execute_script("return Chart.getChart('path-history').data.datasets[0].data.length") == 6
    assert not browser.find_elements(By.ID, "pause-path")  # a scientist gets no action
    highlighted = {
        e.get_attribute("data-link-name")
        for e in browser.find_elements(By.CSS_SELECTOR, "path.link.highlight")
    }
    assert highlighted == {lk.name for lk in path.ordered_links()}
    shoot("map-path-details")
    _click_line(browser, "path.link[data-link-name='capetown-london']")
    WebDriverWait(browser, 15).until(lambda b: details_heading(b) == "Link capetown-london")
    assert "145" in browser.find_element(By.ID, "details").text


def test_the_details_panel_shows_the_latest_click_when_answers_come_back_out_of_order(
    browser, live_server, login, users, traffic
):
    _open_map(browser, live_server, login, "scientist")
    _click(browser, "g.site[data-site-name='SKA1-Mid'] circle")
    WebDriverWait(browser, 15).until(lambda b: details_heading(b) == "SKA1-Mid")
    # The path's answer is held back 1.5 s in the browser, so the site clicked after it answers first.
    browser.execute_script(
        """// The path URL's pattern is '.../paths/0/': its prefix, less the '0/'.
        const pathUrl = document.getElementById('network-map').dataset.pathUrl.slice(0, -2);
        const realFetch = window.fetch;
        window.slowAnswers = 0;
        window.fetch = async (url, options) => {
          const response = await realFetch(url, options);
          if (String(url).startsWith(pathUrl)) {
            await new Promise((done) => setTimeout(done, 1500));
            window.slowAnswers += 1;
          }
          return response;
        };"""
    )
    _path_link(browser, "SKA1-Mid → UKSRC").click()
    browser.find_element(By.CSS_SELECTOR, "g.site[data-site-name='UKSRC'] circle").click()
    WebDriverWait(browser, 15).until(lambda b: details_heading(b) == "UKSRC")
    WebDriverWait(browser, 15).until(lambda b: b.execute_script("return window.slowAnswers") == 1)
    time.sleep(0.5)  # the held-back answer's JSON is parsed and would be drawn within this
    assert details_heading(browser) == "UKSRC"
    assert {
        e.get_attribute("data-site-name") for e in browser.find_elements(By.CSS_SELECTOR, "g.site.highlight")
    } == {"UKSRC"}


def test_product_routing_page_shows_where_each_replica_is_and_why(
    browser, live_server, login, users, topology, shoot
):
    from replicas.services import FileSpec, register_product
    from schedulers.services import push_product
    from topology.models import Telescope

    product = register_product(
        scope="ska",
        name="obs-routing",
        telescope=Telescope.objects.get(name="SKA1-Low"),
        files=[FileSpec("obs-routing.part0.ms", 25 * 2**20, "0cc737eb")],
    )
    push_product(product=product)
    replica = product.replicas.get(state=ReplicaState.COPYING)
    login("scientist")
    browser.get(live_server.url + "/replicas/products/")
    browser.find_element(By.NAME, "q").send_keys("routing")
    _submit(browser, "form.filters button")
    _click(browser, "table.objects a")
    wait(browser, "#replicas")
    rows = {
        r.get_attribute("data-endpoint"): r.text
        for r in browser.find_elements(By.CSS_SELECTOR, "#replicas tbody tr")
    }
    assert set(rows) == {"SKA1-LOW_SDP", replica.endpoint.name}
    assert "written by the SDP" in rows["SKA1-LOW_SDP"]
    assert (
        "SKA1-Low-1-replica-by-share" in rows[replica.endpoint.name]
        and "(weighted_share): first copy; push p" in rows[replica.endpoint.name]
    )
    assert "SUBMITTED" in browser.find_element(By.ID, "transfers").text
    assert not browser.find_elements(By.ID, "product-reroute")
    shoot("product-routing")


def test_flows_chart_follows_the_transfers_without_a_reload(
    browser, live_server, login, users, traffic, shoot
):
    login("operator")
    browser.get(live_server.url + "/transfers/flows/?poll=700")
    wait(browser, "#flows-chart[data-polls]")
    marker = browser.execute_script("window.notReloaded = true; return 1")
    path = NetworkPath.objects.get(source__name="SKA1-Mid", destination__name="UKSRC", is_computed=True)

    def latest(label: str) -> float | None:
        return browser.execute_script(
            "const chart = document.getElementById('flows-chart').chart;"
            "const ds = chart.data.datasets.find(d => d.label === arguments[0]);"
            "return ds ? ds.data[ds.data.length - 1] : null;",
            label,
        )

    WebDriverWait(browser, 15).until(lambda b: (latest(path.name) or 0) > 40)
    assert latest("access mid-access") == pytest.approx(latest(path.name))
    WebDriverWait(browser, 15).until(
        lambda b: int(b.find_element(By.ID, "flows-chart").get_attribute("data-polls")) >= 8
    )
    shoot("flows")
    # The copies end: the next polls bring the path down to zero, on the same page.
    TransferFile.objects.filter(job=traffic["mid"]).update(
        state=FileState.FINISHED, finish_time=timezone.now()
    )
    WebDriverWait(browser, 15).until(lambda b: latest(path.name) == 0)
    assert marker == 1 and browser.execute_script("return window.notReloaded === true")


def test_operator_pauses_a_path_from_the_map_and_it_is_in_the_audit_trail(
    browser, live_server, login, users, traffic, shoot
):
    _open_map(browser, live_server, login, "operator")
    _show_mid_to_uk(browser)
    _click(browser, "#pause-path")
    wait(browser, "#action-form")
    browser.find_element(By.NAME, "reason").send_keys("fibre maintenance at Cape Town")
    browser.find_element(By.NAME, "confirm").click()
    shoot("confirm-pause")
    _submit(browser, "#action-form button[type=submit]")
    assert "Paused SKA1-Mid" in wait(browser, ".messages li").text
    assert browser.current_url.endswith("/topology/map/")
    assert LinkPause.objects.count() == 2
    event = AuditEvent.objects.get()
    assert event.username == "operator" and event.action == "pause_path"
    browser.get(live_server.url + "/operations/audit/")
    row = wait(browser, "table.objects tbody tr").text
    assert "operator" in row and "Pause a path" in row and "fibre maintenance at Cape Town" in row
    shoot("audit")
    # The path now offers to resume.
    browser.get(live_server.url + "/topology/map/")
    wait(browser, "#network-map[data-ready='1']")
    _show_mid_to_uk(browser)
    assert wait(browser, "#resume-path").text == "Resume this path"


def test_a_scientist_gets_no_action_and_a_403(browser, live_server, login, users, traffic, shoot):
    login("scientist")
    browser.get(live_server.url + "/transfers/flows/")
    wait(browser, "#jobs-table")
    assert not browser.find_elements(By.CSS_SELECTOR, "main a.button")
    path = NetworkPath.objects.get(source__name="SKA1-Mid", destination__name="UKSRC", is_computed=True)
    url = f"/operations/paths/{path.pk}/pause/"
    browser.get(live_server.url + url)
    assert "403" in browser.title or "Forbidden" in browser.page_source
    # A forged POST from the scientist's own session, with a valid CSRF token: still refused.
    browser.get(live_server.url + "/transfers/flows/")
    status = browser.execute_async_script(
        """const done = arguments[arguments.length - 1];
        const token = document.querySelector('input[name=csrfmiddlewaretoken]').value;
        fetch(arguments[0], {method: 'POST', credentials: 'same-origin',
          headers: {'Content-Type': 'application/x-www-form-urlencoded', 'X-CSRFToken': token},
          body: 'confirm=on'}).then(r => done(r.status));""",
        url,
    )
    assert status == 403
    job = traffic["mid"]
    status = browser.execute_async_script(
        """const done = arguments[arguments.length - 1];
        const token = document.querySelector('input[name=csrfmiddlewaretoken]').value;
        fetch(arguments[0], {method: 'POST', credentials: 'same-origin',
          headers: {'Content-Type': 'application/x-www-form-urlencoded', 'X-CSRFToken': token},
          body: 'confirm=on'}).then(r => done(r.status));""",
        f"/operations/jobs/{job.job_id}/cancel/",
    )
    assert status == 403
    job.refresh_from_db()
    assert not LinkPause.objects.exists() and job.state == JobState.ACTIVE and not AuditEvent.objects.exists()
    assert DataProduct.objects.count() == 0


def test_operator_edits_a_policy_and_sees_the_models_validation(
    browser, live_server, login, users, topology, shoot
):
    from replicas.models import ReplicaPolicy
    from replicas.services import active_policy
    from topology.models import Telescope

    policy = active_policy(Telescope.objects.get(name="SKA1-Mid"))
    login("operator")
    browser.get(live_server.url + "/operations/policies/")
    shoot("policies")
    _click(browser, f"a[href='/operations/policies/{policy.pk}/']")
    wait(browser, "#policy-form")
    Select(browser.find_element(By.NAME, "shares-0-destination")).select_by_visible_text("SKA1-LOW_SDP")
    browser.find_element(By.NAME, "shares-0-weight").send_keys("2")
    _submit(browser, "#policy-form button[type=submit]")
    error = wait(browser, "#policy-form .errors")
    assert "A replica goes to SRC storage, not to SDP storage." in error.text
    shoot("policy-validation")
    assert not policy.shares.exists() and not AuditEvent.objects.exists()
    Select(browser.find_element(By.NAME, "shares-0-destination")).select_by_visible_text("UKSRC_DISK")
    _submit(browser, "#policy-form button[type=submit]")
    assert "saved" in wait(browser, ".messages li").text
    assert "UKSRC_DISK: 2" in browser.find_element(By.ID, "policies").text
    assert ReplicaPolicy.objects.get(pk=policy.pk).weights() == {"UKSRC_DISK": 2.0}
    assert AuditEvent.objects.get().action == "edit_policy"


def test_operator_reroutes_a_product_from_its_routing_page(
    browser, live_server, login, users, topology, shoot
):
    from replicas.services import FileSpec, register_product
    from schedulers.services import push_product
    from topology.models import Telescope

    product = register_product(
        scope="ska",
        name="obs-reroute",
        telescope=Telescope.objects.get(name="SKA1-Mid"),
        files=[FileSpec("obs-reroute.part0.ms", 25 * 2**20, "0cc737eb")],
    )
    push_product(product=product)
    old = product.replicas.get(state=ReplicaState.COPYING)
    target = "CASRC_DISK" if old.endpoint.name != "CASRC_DISK" else "JPSRC_DISK"
    login("operator")
    browser.get(live_server.url + f"/replicas/products/{product.pk}/")
    _click(browser, "#product-reroute")
    Select(wait(browser, "select[name=destination]")).select_by_visible_text(target)
    browser.find_element(By.NAME, "reason").send_keys(f"{old.endpoint.site.name} storage maintenance")
    browser.find_element(By.NAME, "confirm").click()
    shoot("confirm-reroute")
    _submit(browser, "#action-form button[type=submit]")
    assert "re-routed" in wait(browser, ".messages li").text
    rows = {
        r.get_attribute("data-endpoint"): r.text
        for r in browser.find_elements(By.CSS_SELECTOR, "#replicas tbody tr")
    }
    assert set(rows) == {"SKA1-MID_SDP", target} and "re-routed by operator" in rows[target]
    assert "CANCELED" in browser.find_element(By.ID, "transfers").text
    shoot("product-rerouted")
    assert AuditEvent.objects.get().details["to"] == target
