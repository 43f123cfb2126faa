"""Scientists' rules through the REST API (embedded mode), with the real database: what a rule makes, what
it refuses (a table: 400 naming the field, nothing created), who sees and removes it, and the product search
by metadata with each product's replicas and transfers."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from projects.models import Project
from replicas.choices import ProductState, ReplicaState
from replicas.models import DataProduct, Replica
from replicas.services import FileSpec, register_product
from rules.models import Rule
from topology.models import StorageEndpoint, Telescope
from transfers.models import TransferFile, TransferJob

from ..conftest import _client_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(reference_topology, scientist, operator):  # type: ignore[no-untyped-def]
    """Three products of SKA1-Low: public observatory data, one of the scientist's project AA01, one of
    project BB02 (the scientist is not in it) still proprietary."""
    mine = Project.objects.create(code="AA01", proprietary_days=365)
    mine.members.add(scientist)
    other = Project.objects.create(code="BB02", proprietary_days=365)
    low = Telescope.objects.get(name="SKA1-Low")

    def product(name: str, project: Project | None, kind: str, obs: str) -> DataProduct:
        return register_product(
            scope="ska1-low",
            name=name,
            telescope=low,
            files=[FileSpec(f"{name}.fits", 4096, "00000001")],
            project=project,
            product_type=kind,
            observation_id=obs,
        )

    return {
        "public": product("obs-public", None, "visibilities", "SB-001"),
        "mine": product("obs-mine", mine, "continuum_image", "SB-002"),
        "theirs": product("obs-theirs", other, "continuum_image", "SB-003"),
    }


def _nothing_created() -> None:
    assert Rule.objects.count() == 0
    # Only the SDP copies the products were registered with.
    assert set(Replica.objects.values_list("endpoint__role", flat=True)) == {"sdp"}


PAST = (timezone.now() - dt.timedelta(hours=1)).isoformat()
PUBLIC = "ska1-low:obs-public"
BASE = {"product": PUBLIC, "rse_expression": "AUSRC_DISK"}
# (case, what differs from BASE (None: left out), the field the 400 names)
BAD_RULES = [
    ("unknown product", {"product": "ska1-low:no-such-obs"}, "product"),
    ("unknown product id", {"product": "999999"}, "product"),
    ("another project's product", {"product": "ska1-low:obs-theirs"}, "product"),
    ("a project the user is not in", {"product": None, "filters": {"project": "BB02"}}, "filters.project"),
    ("an unknown project", {"product": None, "filters": {"project": "ZZ99"}}, "filters.project"),
    ("filters matching nothing", {"product": None, "filters": {"observation_id": "SB-404"}}, "filters"),
    ("an unknown filter", {"product": None, "filters": {"colour": "red"}}, "filters.colour"),
    ("no product at all", {"product": None}, "product"),
    ("an expression matching nothing", {"rse_expression": "country=XX"}, "rse_expression"),
    ("an unknown RSE", {"rse_expression": "MARS_DISK"}, "rse_expression"),
    ("SDP storage only", {"rse_expression": "SKA1-LOW_SDP"}, "rse_expression"),
    ("an unreadable expression", {"rse_expression": "(AUSRC_DISK|"}, "rse_expression"),
    ("an unknown attribute", {"rse_expression": "planet=mars"}, "rse_expression"),
    ("an unknown SRC", {"rse_expression": None, "srcs": ["MARSSRC"]}, "srcs"),
    ("a distribution centre as SRC", {"rse_expression": None, "srcs": ["LondonDC"]}, "srcs"),
    ("more copies than SRCs", {"rse_expression": "country=AU", "copies": 2}, "copies"),
    (
        "more copies than named SRCs",
        {"rse_expression": None, "srcs": ["UKSRC", "AUSRC"], "copies": 3},
        "copies",
    ),
    ("zero copies", {"copies": 0}, "copies"),
    ("a lifetime in the past", {"lifetime": -60}, "lifetime"),
    ("an expiry in the past", {"expires_at": PAST}, "expires_at"),
    ("a lifetime beyond the role's", {"lifetime": 400 * 86400}, "lifetime"),
    ("a priority beyond the role's", {"priority": 5}, "priority"),
    ("an activity of the observatory", {"activity": "SKA Data Products"}, "activity"),
    ("both expression and SRCs", {"srcs": ["UKSRC"]}, "rse_expression"),
]


def bad_body(changes: dict[str, object]) -> dict[str, object]:
    body = {**BASE, **changes}
    return {k: v for k, v in body.items() if v is not None}


@pytest.mark.parametrize(("case", "changes", "field"), BAD_RULES, ids=[c[0] for c in BAD_RULES])
def test_a_bad_rule_is_a_400_naming_the_field_and_nothing_is_made(  # type: ignore[no-untyped-def]
    world, scientist_client, case, changes, field
):
    answer = scientist_client.post("/api/rules/rules/", bad_body(changes), format="json")
    assert answer.status_code == 400, (case, answer.content)
    assert field in answer.json(), (case, answer.json())
    _nothing_created()


def test_a_rule_on_a_product_waiting_at_its_sdp_pins_its_first_copies_for_the_push_plan(
    world, scientist_client
):  # type: ignore[no-untyped-def]
    answer = scientist_client.post(
        "/api/rules/rules/",
        {"product": "ska1-low:obs-mine", "srcs": ["UKSRC", "AUSRC"], "copies": 2, "comment": "my analysis"},
        format="json",
    )
    assert answer.status_code == 201, answer.content
    rule = answer.json()
    assert rule["owner"] == "sci" and rule["products"] == ["ska1-low:obs-mine"]
    assert rule["destinations"] == ["AUSRC_DISK", "UKSRC_DISK"] and rule["state"] == "REPLICATING"
    assert rule["activity"] == "SKA User Request" and rule["rucio_rules"] == {}
    # A scientist's rule lives a year at most: without a lifetime it gets that year.
    expires = dt.datetime.fromisoformat(rule["expires_at"].replace("Z", "+00:00"))
    assert dt.timedelta(days=364) < expires - timezone.now() <= dt.timedelta(days=365)
    made = {c["endpoint"]: c for c in rule["copies_made"]}
    # The nearest SRC (AUSRC, Perth) takes the first copy, pinned for the push plan; UKSRC copies from it.
    assert made["AUSRC_DISK"]["state"] == "planned" and made["AUSRC_DISK"]["upstream"] is None
    assert made["UKSRC_DISK"]["upstream"] == "AUSRC_DISK"
    from schedulers.snapshot import pinned_destinations

    assert pinned_destinations() == {world["mine"].pk: "AUSRC"}
    # Listed, and shown with the product's replicas.
    listed = scientist_client.get("/api/rules/rules/").json()["results"]
    assert [r["id"] for r in listed] == [rule["id"]]
    product = scientist_client.get(f"/api/replicas/products/{world['mine'].pk}/").json()
    assert {r["endpoint"] for r in product["replicas"]} == {"SKA1-LOW_SDP", "AUSRC_DISK", "UKSRC_DISK"}

    # Removed: the copies it alone wanted, not started, go with it.
    assert scientist_client.delete(f"/api/rules/rules/{rule['id']}/").status_code == 204
    assert Rule.objects.count() == 0
    assert list(Replica.objects.filter(product=world["mine"]).values_list("endpoint__role", flat=True)) == [
        "sdp"
    ]


def test_a_rule_on_placed_products_by_metadata_copies_from_the_nearest_replica(world, scientist_client):  # type: ignore[no-untyped-def]
    uk = StorageEndpoint.objects.get(name="UKSRC_DISK")
    for key in ("public", "mine"):
        Replica.objects.create(product=world[key], endpoint=uk, state=ReplicaState.AVAILABLE, reason="pushed")
        DataProduct.objects.filter(pk=world[key].pk).update(state=ProductState.PLACED)
    answer = scientist_client.post(
        "/api/rules/rules/",
        {
            "filters": {"telescope": "SKA1-Low", "product_type": "continuum_image"},
            "rse_expression": "FRSRC_DISK|UKSRC_DISK",
            "copies": 2,
        },
        format="json",
    )
    assert answer.status_code == 201, answer.content
    rule = answer.json()
    # Only the continuum image the scientist may see (not BB02's).
    assert rule["products"] == ["ska1-low:obs-mine"]
    made = {c["endpoint"]: c for c in rule["copies_made"]}
    assert made["UKSRC_DISK"]["state"] == "available"  # counted, not copied again
    assert made["FRSRC_DISK"]["state"] == "planned" and made["FRSRC_DISK"]["upstream"] == "UKSRC_DISK"
    assert "rule" in made["FRSRC_DISK"]["reason"]


def test_released_data_of_another_project_may_be_asked_for_by_its_code(world, scientist_client):  # type: ignore[no-untyped-def]
    theirs = world["theirs"]
    DataProduct.objects.filter(pk=theirs.pk).update(proprietary_until=timezone.now() - dt.timedelta(days=1))
    answer = scientist_client.post(
        "/api/rules/rules/", {"filters": {"project": "BB02"}, "srcs": ["ZASRC"]}, format="json"
    )
    assert answer.status_code == 201, answer.content
    assert answer.json()["products"] == ["ska1-low:obs-theirs"]


def test_rules_are_their_owners_and_operators_see_all(
    world, scientist_client, operator_client, django_user_model
):  # type: ignore[no-untyped-def]
    body = {"product": "ska1-low:obs-public", "rse_expression": "AUSRC_DISK"}
    rule_id = scientist_client.post("/api/rules/rules/", body, format="json").json()["id"]
    other = _client_for(django_user_model.objects.create_user("other"))
    assert other.get("/api/rules/rules/").json()["results"] == []
    assert other.delete(f"/api/rules/rules/{rule_id}/").status_code == 404
    assert [r["id"] for r in operator_client.get("/api/rules/rules/").json()["results"]] == [rule_id]
    # An operator may ask for what a scientist may not: the observatory's activity, a higher priority.
    answer = operator_client.post(
        "/api/rules/rules/",
        {"product": "ska1-low:obs-theirs", "srcs": ["ZASRC"], "priority": 5, "activity": "SKA Data Products"},
        format="json",
    )
    assert answer.status_code == 201, answer.content
    assert answer.json()["expires_at"] is None
    # Not even an operator's lifetime runs past what a date can hold (the fuzzer's 5.7e12 s).
    far = {"product": "ska1-low:obs-public", "srcs": ["ZASRC"], "lifetime": 5692235170267}
    assert "lifetime" in operator_client.post("/api/rules/rules/", far, format="json").json()
    assert DataProduct.objects.get(pk=world["theirs"].pk).priority == 5
    assert scientist_client.post("/api/rules/rules/", body).status_code == 201  # a form post works too
    assert APIClient().post("/api/rules/rules/", body, format="json").status_code in (401, 403)


def test_products_are_searched_by_metadata_with_their_replicas_and_transfers(world, scientist_client):  # type: ignore[no-untyped-def]
    def dids(params: dict[str, str]) -> set[str]:
        answer = scientist_client.get("/api/replicas/products/", params)
        assert answer.status_code == 200, answer.content
        return {p["did"] for p in answer.json()["results"]}

    assert dids({"telescope": "SKA1-Low"}) == {"ska1-low:obs-public", "ska1-low:obs-mine"}
    assert dids({"project": "AA01"}) == {"ska1-low:obs-mine"}
    assert dids({"project": "BB02"}) == set()  # not the scientist's to see
    assert dids({"product_type": "visibilities"}) == {"ska1-low:obs-public"}
    assert dids({"observation_id": "SB-002"}) == {"ska1-low:obs-mine"}
    soon = (timezone.now() + dt.timedelta(hours=1)).isoformat()
    assert dids({"created_before": soon, "created_after": "2020-01-01T00:00:00Z"}) == {
        "ska1-low:obs-public",
        "ska1-low:obs-mine",
    }
    assert dids({"created_after": soon}) == set()
    assert scientist_client.get("/api/replicas/products/", {"product_type": "poem"}).status_code == 400
    assert scientist_client.get("/api/replicas/products/", {"created_after": "yesterday"}).status_code == 400

    product = world["mine"]
    job = TransferJob.objects.create(metadata={"product": product.did}, activity="SKA User Request")
    TransferFile.objects.create(
        job=job,
        file_index=0,
        source_surl="root://sdp.ska-low.example.org:1094//srcnet/ska1-low/obs-mine/obs-mine.fits",
        dest_surl="root://storage.ausrc.example.org:1094//srcnet/ska1-low/obs-mine/obs-mine.fits",
        filesize=4096,
    )
    shown = scientist_client.get(f"/api/replicas/products/{product.pk}/").json()
    assert shown["observation_id"] == "SB-002" and shown["product_type"] == "continuum_image"
    assert [r["state"] for r in shown["replicas"]] == ["available"]
    assert [t["job_id"] for t in shown["transfers"]] == [str(job.job_id)]
    assert shown["transfers"][0]["files"] == 1
    assert shown["transfers"][0]["sources"] == ["SKA1-LOW_SDP"]
    assert shown["transfers"][0]["destinations"] == ["AUSRC_DISK"]


def test_a_scientist_holds_a_bounded_number_of_live_rules(world, scientist, scientist_client):  # type: ignore[no-untyped-def]
    from rules.choices import limits_for
    from srcnet.roles import role_of

    most = limits_for(role_of(scientist)).max_live_rules
    now = timezone.now()
    # Rules already held: all but one live; an expired one does not count.
    Rule.objects.bulk_create(
        [Rule(owner=scientist, rse_expression="AUSRC_DISK", expires_at=now + dt.timedelta(days=1))]
        * (most - 1)
        + [Rule(owner=scientist, rse_expression="AUSRC_DISK", expires_at=now - dt.timedelta(days=1))]
    )
    made = scientist_client.post("/api/rules/rules/", BASE, format="json")
    assert made.status_code == 201, made.content
    refused = scientist_client.post("/api/rules/rules/", BASE, format="json")
    assert refused.status_code == 400 and "rules" in refused.json(), refused.content
    assert f"the most your role may hold ({most})" in refused.json()["rules"][0]
    assert Rule.objects.filter(owner=scientist).count() == most + 1  # the refused one left nothing
    # Removing one makes room again.
    scientist_client.delete(f"/api/rules/rules/{made.json()['id']}/")
    assert scientist_client.post("/api/rules/rules/", BASE, format="json").status_code == 201
