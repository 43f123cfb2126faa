"""The campaign page in a real browser: the live chart draws the samples that score.json serves, and
redraws when a new sample arrives."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from campaigns.models import Campaign, CampaignSample
from tests.browser.conftest import (  # noqa: F401  (fixtures, by name)
    _close_connections_after_requests,
    browser,
    login,
    shoot,
    users,
)

pytestmark = pytest.mark.django_db(transaction=True)


def _sample(campaign: Campaign, t: float, achieved_bps: float) -> None:
    CampaignSample.objects.create(
        campaign=campaign,
        elapsed_seconds=t,
        wall_seconds=t,
        target_rate_bps=2e8,
        planned_bytes=int(2.5e7 * t),
        achieved_bytes=int(achieved_bps / 8 * t),
        achieved_rate_bps=achieved_bps,
        products=1,
        complete=1,
        failed=0,
    )


def test_the_live_chart_follows_the_samples(browser, live_server, login, users, shoot):  # noqa: F811
    # A running campaign's rows as the ticks leave them (no worker here: only the page is under test).
    campaign = Campaign.objects.create(
        name="live",
        sources=["SKA1-Low"],
        destinations=["UKSRC_DISK"],
        target_rate_bps=2e8,
        duration_seconds=60,
        min_file_bytes=1,
        max_file_bytes=2,
        state=Campaign.State.RUNNING,
    )
    _sample(campaign, 2, 1e8)
    _sample(campaign, 4, 1.5e8)
    login("scientist")
    browser.get(f"{live_server.url}/campaigns/{campaign.pk}/")

    def points() -> list[str]:
        lines = browser.find_elements(By.CSS_SELECTOR, "#rate-chart polyline")
        return [p.get_attribute("points") or "" for p in lines]

    WebDriverWait(browser, 15).until(lambda _: len(points()) == 2)
    assert [len(p.split()) for p in points()] == [2, 2]  # target and achieved, one point per sample
    _sample(campaign, 6, 2e8)
    Campaign.objects.filter(pk=campaign.pk).update(state=Campaign.State.FINISHED)
    WebDriverWait(browser, 15).until(lambda _: browser.find_element(By.ID, "state").text == "finished")
    assert [len(p.split()) for p in points()] == [3, 3]
    shoot("campaign-detail")
    browser.get(f"{live_server.url}/campaigns/")
    assert "live" in browser.find_element(By.TAG_NAME, "main").text
    shoot("campaigns")


@pytest.mark.usefixtures("users")
def test_the_scenarios_page_compares(browser, live_server, login, shoot, settings, tmp_path):  # noqa: F811
    from schedulers.models import Simulation
    from schedulers.services import run_requested_simulation

    settings.SRCNET_REPORTS_DIR = tmp_path
    simulation = Simulation.objects.create(scenario="all", days=0.05, topology="reference", with_lp=False)
    assert run_requested_simulation(simulation.pk) == "done"
    login("scientist")
    browser.get(f"{live_server.url}/scheduler/simulations/{simulation.pk}/")
    text = browser.find_element(By.TAG_NAME, "main").text
    assert all(name in text for name in ("one_replica", "two_replicas", "full_copy", "distribution"))
    WebDriverWait(browser, 15).until(
        lambda _: all(
            img.get_property("naturalWidth") > 0 for img in browser.find_elements(By.TAG_NAME, "img")
        )
    )
    shoot("scenarios")


def test_campaigns_started_from_the_form(browser, live_server, login, users, shoot, topology, celery_worker):  # noqa: F811
    """The form: a bad schedule is refused naming the field; a recurring campaign is created with its
    periodic task and disabled from its page; a one-shot campaign runs on the worker and its page shows
    the report."""
    from django_celery_beat.models import PeriodicTask

    def fill(values: dict[str, str]) -> None:
        for name, value in values.items():
            field = browser.find_element(By.NAME, name)
            if field.tag_name == "select":
                Select(field).select_by_value(value)
            else:
                field.clear()
                field.send_keys(value)

    login("operator")
    browser.get(f"{live_server.url}/campaigns/new/")
    common = {
        "sources": "SKA1-Low",
        "destinations": "UKSRC_DISK",
        "target_rate_bps": "46000000000",
        "mode": "simulated",
        "topology": "reference",
        "duration_seconds": "3600",
        "min_file_bytes": str(10 * 10**9),
        "max_file_bytes": str(90 * 10**9),
    }
    fill({**common, "name": "nightly", "cron": "61 2 * * *"})
    browser.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()
    error = WebDriverWait(browser, 15).until(lambda b: b.find_elements(By.CSS_SELECTOR, "ul.errorlist"))
    assert "Not a cron expression" in error[0].text and not Campaign.objects.exists()
    shoot("campaign-form-validation")
    fill({"cron": "0 2 * * *"})
    browser.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()
    schedule = WebDriverWait(browser, 15).until(lambda b: b.find_elements(By.ID, "schedule"))
    assert "cron 0 2 * * *" in schedule[0].text and browser.find_element(By.ID, "state").text == "recurring"
    template = Campaign.objects.get(name="nightly")
    assert template.periodic_task is not None and template.periodic_task.enabled
    shoot("campaign-recurring")
    browser.find_element(By.ID, "stop").click()  # "Disable schedule"
    WebDriverWait(browser, 15).until(lambda b: b.find_elements(By.ID, "resume"))
    assert not PeriodicTask.objects.get(pk=template.periodic_task_id).enabled
    # A one-shot campaign started from the form: the worker runs it, the page shows its report.
    browser.get(f"{live_server.url}/campaigns/new/")
    fill({**common, "name": "one-hour"})
    shoot("campaign-form")
    browser.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()
    WebDriverWait(browser, 120).until(lambda b: b.find_element(By.ID, "state").text == "finished")
    browser.refresh()
    images = WebDriverWait(browser, 15).until(lambda b: b.find_elements(By.CSS_SELECTOR, "main img"))
    WebDriverWait(browser, 15).until(lambda _: all(i.get_property("naturalWidth") > 0 for i in images))
    links = [a.text for a in browser.find_elements(By.CSS_SELECTOR, "main li a")]
    assert {"summary.json", "samples.csv", "rate.png"} <= set(links), links
    assert Campaign.objects.get(name="one-hour").created_by == users["operator"]
