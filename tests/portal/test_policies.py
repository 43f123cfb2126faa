"""Replica policies in the portal: everyone reads, operators edit, model validation shows on the form."""

import pytest
from django.urls import reverse

from operations.models import AuditEvent
from replicas.models import ReplicaPolicy
from replicas.services import active_policy
from topology.models import StorageEndpoint, Telescope

pytestmark = pytest.mark.django_db


def _form(telescope, *, name="low-europe", active=False, shares=()):
    data = {
        "name": name,
        "telescope": telescope.pk,
        "kind": "weighted_share",
        "description": "",
        "shares-TOTAL_FORMS": "3",
        "shares-INITIAL_FORMS": "0",
        "shares-MIN_NUM_FORMS": "0",
        "shares-MAX_NUM_FORMS": "1000",
    }
    if active:
        data["is_active"] = "on"
    for i, (endpoint, weight) in enumerate(shares):
        data[f"shares-{i}-destination"] = endpoint.pk
        data[f"shares-{i}-weight"] = str(weight)
    return data


@pytest.fixture
def low(reference_topology):
    return Telescope.objects.get(name="SKA1-Low")


def test_everyone_reads_policies_only_operators_edit(client, scientist, operator, low):
    policy = active_policy(low)
    client.force_login(scientist)
    page = client.get(reverse("operations:policies")).content.decode()
    assert policy.name in page and "the SRCs' own share weights" in page and "Edit" not in page
    assert client.get(reverse("operations:policy-edit", args=[policy.pk])).status_code == 403
    client.force_login(operator)
    assert (
        reverse("operations:policy-edit", args=[policy.pk])
        in client.get(reverse("operations:policies")).content.decode()
    )


def test_operator_creates_a_policy_with_shares(client, operator, low):
    uk, fr = StorageEndpoint.objects.get(name="UKSRC_DISK"), StorageEndpoint.objects.get(name="FRSRC_DISK")
    client.force_login(operator)
    response = client.post(reverse("operations:policy-new"), _form(low, shares=[(uk, 2), (fr, 1)]))
    assert response.status_code == 302
    policy = ReplicaPolicy.objects.get(name="low-europe")
    assert policy.weights() == {"UKSRC_DISK": 2.0, "FRSRC_DISK": 1.0}
    event = AuditEvent.objects.get()
    assert event.action == "edit_policy" and event.details["created"] is True
    assert event.details["shares"] == {"UKSRC_DISK": 2.0, "FRSRC_DISK": 1.0}


def test_an_sdp_destination_shows_the_models_message(client, operator, low):
    sdp = StorageEndpoint.objects.get(name="SKA1-MID_SDP")
    client.force_login(operator)
    response = client.post(reverse("operations:policy-new"), _form(low, shares=[(sdp, 1)]))
    assert response.status_code == 400
    assert "A replica goes to SRC storage, not to SDP storage." in response.content.decode()
    assert not ReplicaPolicy.objects.filter(name="low-europe").exists() and not AuditEvent.objects.exists()


def test_a_second_active_policy_for_a_telescope_is_refused(client, operator, low):
    active_policy(low)
    client.force_login(operator)
    response = client.post(reverse("operations:policy-new"), _form(low, active=True))
    assert response.status_code == 400 and "one_active_policy_per_telescope" in response.content.decode()
    assert ReplicaPolicy.objects.filter(telescope=low).count() == 1


def test_a_negative_weight_is_a_form_error_and_the_edit_is_not_kept(client, operator, low):
    policy = active_policy(low)
    uk = StorageEndpoint.objects.get(name="UKSRC_DISK")
    client.force_login(operator)
    url = reverse("operations:policy-edit", args=[policy.pk])
    response = client.post(url, _form(low, name="renamed", active=True, shares=[(uk, -1)]))
    assert response.status_code == 400 and "greater than or equal to 0" in response.content.decode()
    policy.refresh_from_db()
    assert policy.name != "renamed" and not policy.shares.exists() and not AuditEvent.objects.exists()


def test_a_duplicate_destination_is_a_form_error(client, operator, low):
    uk = StorageEndpoint.objects.get(name="UKSRC_DISK")
    client.force_login(operator)
    response = client.post(reverse("operations:policy-new"), _form(low, shares=[(uk, 1), (uk, 2)]))
    assert response.status_code == 400 and "UKSRC_DISK appears twice" in response.content.decode()
    assert not ReplicaPolicy.objects.filter(name="low-europe").exists()


def test_a_scientist_cannot_edit(client, scientist, low):
    policy = active_policy(low)
    client.force_login(scientist)
    response = client.post(reverse("operations:policy-edit", args=[policy.pk]), _form(low, name="mine"))
    assert response.status_code == 403
    policy.refresh_from_db()
    assert policy.name != "mine" and not AuditEvent.objects.exists()


def test_operator_stores_the_parameters_of_each_kind(client, operator, low):
    from topology.models import RegionalCentre

    client.force_login(operator)
    data = _form(low, name="low-two") | {"kind": "two_replicas", "partners": '{"UKSRC": "AUSRC"}'}
    assert client.post(reverse("operations:policy-new"), data).status_code == 302
    assert ReplicaPolicy.objects.get(name="low-two").partners == {"UKSRC": "AUSRC"}
    page = client.get(reverse("operations:policies")).content.decode()
    assert "partners UKSRC -&gt; AUSRC" in page
    centre = RegionalCentre.objects.get(name="SingaporeDC")
    data = _form(low, name="low-relay") | {
        "kind": "distribution",
        "relay_centre": centre.pk,
        "relay_all": "on",
    }
    assert client.post(reverse("operations:policy-new"), data).status_code == 302
    stored = ReplicaPolicy.objects.get(name="low-relay")
    assert stored.relay_centre == centre and stored.relay_all and stored.degrade_at == 0.8


def test_a_full_copy_without_a_copy_site_shows_the_models_message(client, operator, low):
    client.force_login(operator)
    response = client.post(reverse("operations:policy-new"), _form(low) | {"kind": "full_copy"})
    assert response.status_code == 400
    assert "The full-copy policy needs a copy site." in response.content.decode()
    assert not ReplicaPolicy.objects.filter(name="low-europe").exists() and not AuditEvent.objects.exists()
