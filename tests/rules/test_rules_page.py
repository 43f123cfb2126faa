"""The portal's Rules page: a scientist sees their rules with each copy, makes one with the form (a refused
one shows the service's message on the field it names and makes nothing), and removes it."""

from __future__ import annotations

import pytest
from django.test import Client

from replicas.models import Replica
from replicas.services import FileSpec, register_product
from rules.models import Rule
from topology.models import Telescope

pytestmark = pytest.mark.django_db


@pytest.fixture
def browser(reference_topology, scientist) -> Client:  # type: ignore[no-untyped-def]
    register_product(
        scope="ska1-low",
        name="obs-page",
        telescope=Telescope.objects.get(name="SKA1-Low"),
        files=[FileSpec("a.fits", 2048, "00000001")],
        observation_id="SB-7",
    )
    client = Client()
    client.force_login(scientist)
    return client


def test_a_scientist_makes_sees_and_removes_a_rule_in_the_portal(browser):  # type: ignore[no-untyped-def]
    # The portal's product list finds it by its observation id (the API's filter set).
    listed = browser.get("/replicas/products/", {"observation_id": "SB-7"}).content.decode()
    assert "ska1-low:obs-page" in listed and "1 result" in listed
    assert (
        "ska1-low:obs-page"
        not in browser.get("/replicas/products/", {"observation_id": "SB-8"}).content.decode()
    )

    page = browser.get("/rules/")
    assert page.status_code == 200 and b"No rules yet." in page.content and b'id="rule-form"' in page.content

    refused = browser.post("/rules/", {"observation_id": "SB-7", "srcs": "AUSRC", "copies": 2, "priority": 3,
                                        "activity": "SKA User Request"})  # fmt: skip
    assert refused.status_code == 400
    assert "2 copies asked for" in refused.content.decode() and not Rule.objects.exists()
    refused = browser.post("/rules/", {"observation_id": "SB-7", "rse_expression": "country=XX", "copies": 1,
                                        "priority": 3, "activity": "SKA User Request"})  # fmt: skip
    assert "matches no SRC storage" in refused.content.decode() and not Rule.objects.exists()
    assert not Replica.objects.exclude(endpoint__role="sdp").exists()

    made = browser.post("/rules/", {"observation_id": "SB-7", "srcs": "AUSRC", "copies": 1, "priority": 3,
                                     "activity": "SKA User Request", "lifetime": 7}, follow=True)  # fmt: skip
    assert made.status_code == 200
    rule = Rule.objects.get()
    html = made.content.decode()
    assert (
        f"Rule {rule.pk} made" in html and "obs-page @ AUSRC_DISK: planned" in html and "REPLICATING" in html
    )

    gone = browser.post(f"/rules/{rule.pk}/remove/", follow=True)
    assert f"Rule {rule.pk} removed." in gone.content.decode() and not Rule.objects.exists()
    assert browser.get(f"/rules/{rule.pk}/remove/").status_code == 405
