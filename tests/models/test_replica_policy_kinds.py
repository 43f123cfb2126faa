"""The four stored replica policy kinds: every invariant of ReplicaPolicy.clean(), in the model and through
the API (400 naming the field, nothing written)."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError

from replicas.models import ReplicaPolicy
from topology.models import NetworkPath, RegionalCentre, StorageEndpoint, Telescope

pytestmark = pytest.mark.django_db


def _policy(**fields: Any) -> ReplicaPolicy:
    rc = {
        k: RegionalCentre.objects.get(name=v) for k, v in fields.items() if k in ("copy_site", "relay_centre")
    }
    fields.update(rc)
    return ReplicaPolicy(
        name="p", telescope=Telescope.objects.get(name="SKA1-Low"), is_active=False, **fields
    )


@pytest.mark.parametrize(
    "fields",
    [
        {"kind": "weighted_share"},
        {"kind": "two_replicas"},
        {"kind": "two_replicas", "partners": {"UKSRC": "AUSRC", "AUSRC": "UKSRC"}},
        {"kind": "full_copy", "copy_site": "UKSRC"},
        {"kind": "distribution", "relay_centre": "SingaporeDC", "relay_all": True},
        {"kind": "weighted_share", "relay_centre": "SingaporeDC", "degrade_order": ["relay"]},
        {"kind": "weighted_share", "degrade_order": [], "degrade_at": 0.9, "recover_at": 0.2},
    ],
)
def test_valid_policies_of_every_kind(reference_topology, fields) -> None:  # type: ignore[no-untyped-def]
    _policy(**fields).full_clean()


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"kind": "full_copy"}, "copy_site", "needs a copy site"),
        ({"kind": "full_copy", "copy_site": "LondonDC"}, "copy_site", "is a distribution centre"),
        ({"kind": "weighted_share", "copy_site": "UKSRC"}, "copy_site", "Only the full-copy policy"),
        ({"kind": "weighted_share", "partners": {"UKSRC": "AUSRC"}}, "partners", "Only the two-replicas"),
        ({"kind": "two_replicas", "partners": {"UKSRC": "UKSRC"}}, "partners", "cannot be its own partner"),
        ({"kind": "two_replicas", "partners": {"UKSRC": "LondonDC"}}, "partners", "LondonDC is not an SKA"),
        ({"kind": "two_replicas", "partners": {"UKSRC": "NOSRC"}}, "partners", "NOSRC is not an SKA"),
        ({"kind": "two_replicas", "partners": ["UKSRC", "AUSRC"]}, "partners", "A mapping of SRC name"),
        ({"kind": "distribution"}, "relay_centre", "needs a relay centre"),
        ({"kind": "distribution", "relay_centre": "UKSRC"}, "relay_centre", "UKSRC is an SRC"),
        ({"kind": "weighted_share", "relay_all": True}, "relay_all", "Only the distribution policy"),
        ({"degrade_order": ["relay", "panic"]}, "degrade_order", "A list of steps"),
        ({"degrade_order": ["relay", "relay"]}, "degrade_order", "appears twice"),
        ({"degrade_order": "relay"}, "degrade_order", "A list of steps"),
        ({"degrade_at": 0.0}, "degrade_at", "above 0"),
        ({"degrade_at": 0.5, "recover_at": 0.5}, "recover_at", "below degrade_at"),
    ],
)
def test_bad_parameters_are_rejected_naming_the_field(reference_topology, fields, field, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValidationError) as caught:
        _policy(**fields).full_clean()
    assert field in caught.value.message_dict, caught.value.message_dict
    assert message in " ".join(caught.value.message_dict[field])


def test_a_copy_site_needs_disk_storage_and_paths(reference_topology) -> None:  # type: ignore[no-untyped-def]
    StorageEndpoint.objects.filter(name="UKSRC_DISK").update(is_active=False)
    with pytest.raises(ValidationError, match="UKSRC has no active SRC disk storage"):
        _policy(kind="full_copy", copy_site="UKSRC").full_clean()
    NetworkPath.objects.filter(source__name="SKA1-Low", destination__name="AUSRC").delete()
    with pytest.raises(ValidationError, match="No network path from SKA1-Low to AUSRC"):
        _policy(kind="full_copy", copy_site="AUSRC").full_clean()
    NetworkPath.objects.filter(source__name="FRSRC", destination__name="ESSRC").delete()
    with pytest.raises(ValidationError, match="No network path from FRSRC to ESSRC"):
        _policy(kind="full_copy", copy_site="ESSRC").full_clean()


def test_a_partner_needs_disk_storage_and_a_path(reference_topology) -> None:  # type: ignore[no-untyped-def]
    NetworkPath.objects.filter(source__name="UKSRC", destination__name="AUSRC").delete()
    with pytest.raises(ValidationError, match="No network path from UKSRC to its partner AUSRC"):
        _policy(kind="two_replicas", partners={"UKSRC": "AUSRC"}).full_clean()
    StorageEndpoint.objects.filter(name="FRSRC_DISK").update(is_active=False)
    with pytest.raises(ValidationError, match="FRSRC has no active SRC disk storage"):
        _policy(kind="two_replicas", partners={"UKSRC": "FRSRC"}).full_clean()


def test_a_relay_centre_needs_buffer_storage_and_a_path(reference_topology) -> None:  # type: ignore[no-untyped-def]
    NetworkPath.objects.filter(source__name="SKA1-Low", destination__name="LondonDC").delete()
    with pytest.raises(ValidationError, match="No network path from SKA1-Low to LondonDC"):
        _policy(kind="distribution", relay_centre="LondonDC").full_clean()
    StorageEndpoint.objects.filter(name="SINGAPOREDC_BUFFER").update(is_active=False)
    with pytest.raises(ValidationError, match="SingaporeDC has no active buffer storage"):
        _policy(kind="distribution", relay_centre="SingaporeDC").full_clean()


def test_the_api_stores_every_kind_with_its_parameters(operator_client, reference_topology) -> None:  # type: ignore[no-untyped-def]
    payloads: list[dict[str, Any]] = [
        {"kind": "two_replicas", "partners": {"UKSRC": "AUSRC"}},
        {"kind": "full_copy", "copy_site": "UKSRC"},
        {"kind": "distribution", "relay_centre": "SingaporeDC", "relay_all": True, "degrade_order": []},
    ]
    for index, extra in enumerate(payloads):
        body = {"name": f"low-{index}", "telescope": "SKA1-Low", "is_active": False, **extra}
        response = operator_client.post("/api/replicas/policies/", body, format="json")
        assert response.status_code == 201, response.json()
        for key, value in extra.items():
            assert response.json()[key] == value
    copy_site = ReplicaPolicy.objects.get(name="low-1").copy_site
    assert copy_site is not None and copy_site.name == "UKSRC"


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"kind": "full_copy"}, "copy_site"),
        ({"kind": "full_copy", "copy_site": "SingaporeDC"}, "copy_site"),
        ({"kind": "full_copy", "copy_site": "NOWHERE"}, "copy_site"),
        ({"kind": "two_replicas", "partners": {"UKSRC": "UKSRC"}}, "partners"),
        ({"kind": "distribution", "relay_centre": "AUSRC"}, "relay_centre"),
        ({"kind": "weighted_share", "relay_all": True}, "relay_all"),
        ({"degrade_order": ["sleep"]}, "degrade_order"),
        ({"degrade_at": 0.4, "recover_at": 0.6}, "recover_at"),
        ({"degrade_at": 1.5}, "degrade_at"),
    ],
)
def test_the_api_answers_400_naming_the_field_and_writes_nothing(
    operator_client, reference_topology, extra, field
) -> None:  # type: ignore[no-untyped-def]
    before = ReplicaPolicy.objects.count()
    body = {"name": "bad", "telescope": "SKA1-Low", "is_active": False, **extra}
    response = operator_client.post("/api/replicas/policies/", body, format="json")
    assert response.status_code == 400 and field in response.json(), response.json()
    assert ReplicaPolicy.objects.count() == before
    # An update with the same values is refused the same way and leaves the policy as it was.
    good = operator_client.post(
        "/api/replicas/policies/",
        {"name": "good", "telescope": "SKA1-Low", "is_active": False},
        format="json",
    ).json()
    response = operator_client.patch(f"/api/replicas/policies/{good['id']}/", extra, format="json")
    assert response.status_code == 400 and field in response.json(), response.json()
    stored = ReplicaPolicy.objects.get(pk=good["id"])
    assert (stored.kind, stored.copy_site_id, stored.partners, stored.degrade_at) == (
        "weighted_share",
        None,
        {},
        0.8,
    )
