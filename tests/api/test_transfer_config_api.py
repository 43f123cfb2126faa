"""Transfer configuration over the REST API: storage caps, activity shares, link pauses, optimizer log."""

import pytest

from tests.conftest import register_storage
from transfers.models import ActivityShare, LinkPause, OptimizerDecision, StorageElementLimit

pytestmark = pytest.mark.django_db


def test_admin_configures_caps_and_shares_and_operator_pauses(site_admin_client, operator_client):
    register_storage("root://a:1094", "davs://b:443")
    created = site_admin_client.post(
        "/api/transfers/storage-limits/",
        {"storage_element": "*", "inbound_max_active": 50, "outbound_max_active": 40},
        format="json",
    )
    assert created.status_code == 201 and StorageElementLimit.objects.get().inbound_max_active == 50
    share = site_admin_client.post(
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
def test_bad_configuration_is_400_naming_the_field(site_admin_client, url, payload, field):
    response = site_admin_client.post(url, payload, format="json")
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


def test_limits_and_pauses_name_registered_storage_only(site_admin_client, operator_client):
    register_storage("root://a:1094")
    unknown = operator_client.post(
        "/api/transfers/link-pauses/",
        {"source_se": "root://a:1094", "dest_se": "root://nowhere:1094", "reason": "x"},
        format="json",
    )
    assert unknown.status_code == 400 and "dest_se" in unknown.json()
    cap = site_admin_client.post(
        "/api/transfers/storage-limits/",
        {"storage_element": "file://", "inbound_max_active": 1, "outbound_max_active": 1},
        format="json",
    )
    assert cap.status_code == 400 and "storage_element" in cap.json()
    assert LinkPause.objects.count() == 0 and StorageElementLimit.objects.count() == 0


def test_operators_do_not_configure_the_transfer_service(operator_client):
    response = operator_client.post(
        "/api/transfers/link-limits/", {"source_se": "*", "dest_se": "*", "max_active": 2}, format="json"
    )
    assert response.status_code == 403


def test_optimizer_decisions_are_read_only(operator_client):
    OptimizerDecision.objects.create(
        source_se="root://a:1", dest_se="root://b:1", active=3, rationale="first sight"
    )
    listed = operator_client.get("/api/transfers/optimizer-decisions/", {"source_se": "root://a:1"}).json()
    assert listed["count"] == 1 and listed["results"][0]["rationale"] == "first sight"
    assert operator_client.post("/api/transfers/optimizer-decisions/", {}, format="json").status_code == 405
