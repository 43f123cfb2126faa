"""Transfer configuration over the REST API: storage caps, activity shares, link pauses, optimizer log."""

import pytest

from transfers.models import ActivityShare, LinkPause, OptimizerDecision, StorageElementLimit

pytestmark = pytest.mark.django_db


def test_operator_configures_caps_shares_and_pauses(operator_client):
    created = operator_client.post(
        "/api/transfers/storage-limits/",
        {"storage_element": "*", "inbound_max_active": 50, "outbound_max_active": 40},
        format="json",
    )
    assert created.status_code == 201 and StorageElementLimit.objects.get().inbound_max_active == 50
    share = operator_client.post(
        "/api/transfers/activity-shares/", {"activity": "SKA Data Products", "weight": 3}, format="json"
    )
    assert share.status_code == 201
    pause = operator_client.post(
        "/api/transfers/link-pauses/",
        {"source_se": "root://a:1094", "dest_se": "davs://b:443", "reason": "fibre cut"},
        format="json",
    )
    assert pause.status_code == 201 and pause.json()["created_by"] == "op"
    assert operator_client.delete(f"/api/transfers/link-pauses/{pause.json()['id']}/").status_code == 204
    assert LinkPause.objects.count() == 0


@pytest.mark.parametrize(
    ("url", "payload", "field"),
    [
        ("/api/transfers/activity-shares/", {"activity": "x", "weight": -1}, "weight"),
        (
            "/api/transfers/storage-limits/",
            {"storage_element": "*", "inbound_max_active": 0, "outbound_max_active": 1},
            "inbound_max_active",
        ),
        (
            "/api/transfers/link-limits/",
            {"source_se": "*", "dest_se": "*", "min_active": 5, "max_active": 2},
            "min_active",
        ),
    ],
)
def test_bad_configuration_is_400_naming_the_field(operator_client, url, payload, field):
    response = operator_client.post(url, payload, format="json")
    assert response.status_code == 400 and field in response.json()
    assert ActivityShare.objects.count() == 0 and StorageElementLimit.objects.count() == 0


def test_scientists_read_but_do_not_configure(scientist_client):
    assert scientist_client.get("/api/transfers/activity-shares/").status_code == 200
    assert (
        scientist_client.post(
            "/api/transfers/activity-shares/", {"activity": "x", "weight": 1}, format="json"
        ).status_code
        == 403
    )


def test_optimizer_decisions_are_read_only(operator_client):
    OptimizerDecision.objects.create(
        source_se="root://a:1", dest_se="root://b:1", active=3, rationale="first sight"
    )
    listed = operator_client.get("/api/transfers/optimizer-decisions/", {"source_se": "root://a:1"}).json()
    assert listed["count"] == 1 and listed["results"][0]["rationale"] == "first sight"
    assert operator_client.post("/api/transfers/optimizer-decisions/", {}, format="json").status_code == 405
