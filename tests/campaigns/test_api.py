"""Campaign validation through the API: bad input is 400 naming the field and writes nothing."""

from __future__ import annotations

import pytest

from campaigns.models import Campaign
from tests.campaigns.inputs import GOOD, MIB

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"target_rate_bps": 0}, "target_rate_bps"),
        ({"target_rate_bps": -5}, "target_rate_bps"),
        ({"duration_seconds": 0}, "duration_seconds"),
        ({"min_file_bytes": 4 * MIB, "max_file_bytes": MIB}, "max_file_bytes"),
        ({"min_file_bytes": 0}, "min_file_bytes"),
        ({"sources": []}, "sources"),
        ({"destinations": []}, "destinations"),
        ({"sources": ["Atlantis"]}, "sources"),
        ({"destinations": ["SKA1-LOW_SDP"]}, "destinations"),
        ({"mode": "warp"}, "mode"),
        (
            {
                "mode": "simulated",
                "duration_seconds": 8 * 86400,
                "min_file_bytes": 10**10,
                "max_file_bytes": 10**10,
            },
            "duration_seconds",
        ),
        ({"mode": "simulated", "topology": "reference"}, "min_file_bytes"),
        ({"ramp_seconds": 60}, "ramp_seconds"),
        ({"files_per_product": 0}, "files_per_product"),
    ],
)
def test_bad_campaigns_are_400_and_write_nothing(operator_client, reference_topology, change, field):
    response = operator_client.post("/api/campaigns/", {**GOOD, **change}, format="json")
    assert response.status_code == 400 and field in response.json(), response.json()
    assert Campaign.objects.count() == 0


def test_scientists_read_but_do_not_write_and_anonymous_see_nothing(
    operator_client, scientist_client, client, reference_topology
):
    assert scientist_client.post("/api/campaigns/", GOOD, format="json").status_code == 403
    assert client.get("/api/campaigns/").status_code in (401, 403)
    assert Campaign.objects.count() == 0
    response = operator_client.post("/api/campaigns/", GOOD, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["state"] == "scheduled" and body["created_by"] == "op"
    assert scientist_client.get(f"/api/campaigns/{body['id']}/").json()["name"] == "dc-1"
    assert scientist_client.post(f"/api/campaigns/{body['id']}/stop/").status_code == 403
    # Stop then resume: resume starts a new tick chain (the old one, if queued, ends on its own).
    assert operator_client.post(f"/api/campaigns/{body['id']}/stop/").json()["state"] == "stopped"
    assert operator_client.post(f"/api/campaigns/{body['id']}/stop/").status_code == 409
    assert operator_client.post(f"/api/campaigns/{body['id']}/resume/").json()["state"] == "scheduled"
    assert Campaign.objects.get().generation == 1


def test_the_target_curve_ramps_then_holds():
    c = Campaign(target_rate_bps=8e6, ramp_seconds=10, duration_seconds=100)
    assert c.planned_bytes_at(0) == 0
    assert c.planned_bytes_at(10) == pytest.approx(1e6 * 10 / 2)
    assert c.planned_bytes_at(100) == pytest.approx(1e6 * 95)
    assert c.planned_bytes_at(1000) == c.planned_bytes_at(100)
    assert c.target_rate_at(5) == pytest.approx(4e6)


def test_portal_pages(operator, scientist, client, reference_topology):
    client.force_login(scientist)
    assert client.get("/campaigns/").status_code == 200
    assert client.get("/campaigns/new/").status_code == 403
    client.force_login(operator)
    page = client.get("/campaigns/new/")
    assert page.status_code == 200
    response = client.post(
        "/campaigns/new/",
        {
            **GOOD,
            "sources": "SKA1-Low",
            "destinations": "UKSRC_DISK",
            "scenario": "one_replica",
            "topology": "db",
            "files_per_product": 1,
            "ramp_seconds": 0,
        },
    )
    assert response.status_code == 302, response.content.decode()[-2000:]
    campaign = Campaign.objects.get()
    assert b"dc-1" in client.get(f"/campaigns/{campaign.pk}/").content
    assert client.get(f"/campaigns/{campaign.pk}/score.json").json() == {"state": "scheduled", "samples": []}
