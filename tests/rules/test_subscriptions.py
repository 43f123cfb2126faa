"""Subscriptions (standing rules), embedded mode, with the real database: a product registered after the
subscription that matches it, and that its owner may see, gets a rule; others do not; bad subscriptions are
400s naming the field."""

from __future__ import annotations

import pytest

from projects.models import Project
from replicas.models import DataProduct
from replicas.services import FileSpec, register_product
from rules.models import Rule, Subscription
from topology.models import Telescope

pytestmark = pytest.mark.django_db


def _register(name: str, *, project: Project | None = None, kind: str = "continuum_image") -> DataProduct:
    return register_product(
        scope="ska1-low",
        name=name,
        telescope=Telescope.objects.get(name="SKA1-Low"),
        files=[FileSpec(f"{name}.fits", 4096, "00000001")],
        project=project,
        product_type=kind,
    )


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"filters": {}, "srcs": ["AUSRC"]}, "filters"),
        ({"filters": {"project": "BB02"}, "srcs": ["AUSRC"]}, "filters.project"),
        ({"filters": {"created_after": "2026-01-01T00:00:00Z"}, "srcs": ["AUSRC"]}, "filters.created_after"),
        ({"filters": {"product_type": "poem"}, "srcs": ["AUSRC"]}, "filters.product_type"),
        ({"filters": {"project": "AA01"}, "rse_expression": "country=XX"}, "rse_expression"),
        ({"filters": {"project": "AA01"}, "srcs": ["AUSRC"], "copies": 2}, "copies"),
        ({"filters": {"project": "AA01"}, "srcs": ["AUSRC"], "lifetime": 0}, "lifetime"),
        ({"filters": {"project": "AA01"}, "srcs": ["AUSRC"], "priority": 4}, "priority"),
    ],
)
def test_a_bad_subscription_is_a_400_naming_the_field(
    reference_topology, scientist, scientist_client, body, field
):  # type: ignore[no-untyped-def]
    Project.objects.create(code="AA01").members.add(scientist)
    Project.objects.create(code="BB02")
    answer = scientist_client.post("/api/rules/subscriptions/", body, format="json")
    assert answer.status_code == 400 and field in answer.json(), answer.content
    assert not Subscription.objects.exists()


def test_new_matching_products_get_rules(  # type: ignore[no-untyped-def]
    reference_topology, scientist, scientist_client, operator_client, django_capture_on_commit_callbacks
):
    mine = Project.objects.create(code="AA01")
    mine.members.add(scientist)
    before = _register("img-before", project=mine)
    answer = scientist_client.post(
        "/api/rules/subscriptions/",
        {
            "name": "AA01 images",
            "filters": {"project": "AA01", "product_type": "continuum_image"},
            "srcs": ["AUSRC"],
            "lifetime": 86400,
        },
        format="json",
    )
    assert answer.status_code == 201, answer.content
    subscription = answer.json()

    with django_capture_on_commit_callbacks(execute=True):
        matching = _register("img-after", project=mine)
        _register("vis-after", project=mine, kind="visibilities")  # another type
        _register("img-public")  # no project: not AA01's
    rules = list(Rule.objects.all())
    assert [r.products.get().did for r in rules] == [matching.did]
    rule = rules[0]
    assert rule.owner == scientist and rule.subscription_id == subscription["id"]
    assert rule.comment == f"subscription {subscription['id']} AA01 images"
    assert rule.replicas.get().endpoint.name == "AUSRC_DISK"
    assert not before.rules.exists()  # registered before the subscription
    shown = scientist_client.get(f"/api/rules/subscriptions/{subscription['id']}/").json()
    assert shown["rules"] == [rule.pk] and shown["last_error"] == ""

    # The owner leaves the project: the next matching product gets no rule, and the subscription says why.
    mine.members.remove(scientist)
    with django_capture_on_commit_callbacks(execute=True):
        _register("img-later", project=mine)
    assert Rule.objects.count() == 1
    assert "filters.project" in Subscription.objects.get().last_error

    # Removed: no more rules (its rules stay).
    assert operator_client.get("/api/rules/subscriptions/").json()["count"] == 1
    assert scientist_client.delete(f"/api/rules/subscriptions/{subscription['id']}/").status_code == 204
    assert Rule.objects.count() == 1 and not Subscription.objects.exists()


def test_a_scientist_holds_a_bounded_number_of_subscriptions(reference_topology, scientist, scientist_client):  # type: ignore[no-untyped-def]
    from rules.choices import limits_for
    from srcnet.roles import role_of

    Project.objects.create(code="AA01").members.add(scientist)
    most = limits_for(role_of(scientist)).max_subscriptions
    body = {"filters": {"project": "AA01"}, "rse_expression": "AUSRC_DISK"}
    for _ in range(most):
        assert scientist_client.post("/api/rules/subscriptions/", body, format="json").status_code == 201
    refused = scientist_client.post("/api/rules/subscriptions/", body, format="json")
    assert refused.status_code == 400 and "subscriptions" in refused.json(), refused.content
    assert f"the most your role may hold ({most})" in refused.json()["subscriptions"][0]
    assert Subscription.objects.filter(owner=scientist).count() == most
