"""srcnet rules (and products' metadata search) against the live server, as a scientist: each bad request
exits 3 (VALIDATION) naming the field, and makes nothing."""

from __future__ import annotations

import json

import pytest

from cli.exit_codes import ExitCode
from projects.models import Project
from replicas.models import Replica
from rules.models import Rule

FILES = ["--file", "image.fits:1048576:0a1b2c3d"]


@pytest.fixture
def products(srcnet, topology, scientist):  # type: ignore[no-untyped-def]
    """Made by the operator: a continuum image of the scientist's project AA01 and one of BB02."""
    Project.objects.create(code="AA01").members.add(scientist)
    Project.objects.create(code="BB02")
    for name, project in (("img-mine", "AA01"), ("img-theirs", "BB02")):
        made = srcnet(
            "products", "create", "--scope", "ska1-low", "--name", name, "--telescope", "SKA1-Low",
            "--project", project, "--type", "continuum_image", "--observation", f"SB-{name}", *FILES,
        )  # fmt: skip
        assert made.code == ExitCode.OK, made.err


BAD = [
    ("--product", "ska1-low:nothing", "--src", "AUSRC", "product: "),
    ("--product", "ska1-low:img-theirs", "--src", "AUSRC", "product: "),
    ("--project", "BB02", "--src", "AUSRC", "filters.project: "),
    ("--product", "ska1-low:img-mine", "--rse-expression", "country=XX", "rse_expression: "),
    ("--product", "ska1-low:img-mine", "--src", "AUSRC", "--copies", "2", "copies: "),
    ("--product", "ska1-low:img-mine", "--src", "AUSRC", "--lifetime=-1h", "lifetime: "),
    ("--product", "ska1-low:img-mine", "--src", "AUSRC", "--priority", "5", "priority: "),
]


@pytest.mark.parametrize("case", BAD, ids=[c[-1].rstrip(": ") + "-" + c[1] for c in BAD])
def test_a_bad_rule_exits_3_naming_the_field(srcnet, products, scientist_token, case):  # type: ignore[no-untyped-def]
    *argv, field = case
    result = srcnet("rules", "create", *argv, token=scientist_token)
    assert result.code == ExitCode.VALIDATION, (result.out, result.err)
    assert field in result.err, result.err
    assert not Rule.objects.exists()
    assert not Replica.objects.exclude(endpoint__role="sdp").exists()


def test_a_scientist_finds_asks_for_lists_and_removes(srcnet, products, scientist_token):  # type: ignore[no-untyped-def]
    found = srcnet(
        "products",
        "list",
        "--project",
        "AA01",
        "--type",
        "continuum_image",
        "-o",
        "json",
        token=scientist_token,
    )
    assert found.code == ExitCode.OK, found.err
    assert [p["did"] for p in json.loads(found.out)] == ["ska1-low:img-mine"]
    # BB02 is not the scientist's: its image is not found, even by its observation id.
    theirs = srcnet("products", "list", "--observation", "SB-img-theirs", "-o", "json", token=scientist_token)
    assert json.loads(theirs.out) == []

    made = srcnet(
        "rules", "create", "--project", "AA01", "--src", "AUSRC", "--lifetime", "30d", "--comment", "thesis",
        token=scientist_token,
    )  # fmt: skip
    assert made.code == ExitCode.OK, made.err
    assert "REPLICATING" in made.out and "AUSRC_DISK" in made.out and "ska1-low:img-mine" in made.out
    rule = Rule.objects.get()
    assert rule.selection == {"filters": {"project": "AA01"}} and rule.comment == "thesis"

    listed = json.loads(srcnet("rules", "list", "-o", "json", token=scientist_token).out)
    assert [r["id"] for r in listed] == [rule.pk]
    shown = srcnet("rules", "show", str(rule.pk), token=scientist_token)
    # The rule's copy is planned, or already copying if a push cycle (on the rule's commit) got to it first:
    # a run on a loaded machine showed it copying.
    copy_line = next(
        line for line in shown.out.splitlines() if "AUSRC_DISK" in line and "ska1-low:img-mine" in line
    )
    assert shown.code == ExitCode.OK and "COPIES" in shown.out
    assert "planned" in copy_line or "copying" in copy_line, shown.out

    product_page = srcnet("products", "show", str(rule.products.get().pk), token=scientist_token)
    assert "AUSRC_DISK" in product_page.out and "TRANSFERS" in product_page.out

    removed = srcnet("rules", "remove", str(rule.pk), token=scientist_token)
    assert removed.code == ExitCode.OK and f"rule {rule.pk} removed" in removed.err
    assert srcnet("rules", "show", str(rule.pk), token=scientist_token).code == ExitCode.NOT_FOUND
    assert srcnet("rules", "remove", str(rule.pk), token=scientist_token).code == ExitCode.NOT_FOUND
    assert srcnet("rules", "create", "--src", "AUSRC", "--lifetime", "soon").code == ExitCode.USAGE


def test_a_subscription_gives_new_products_rules(srcnet, products, scientist_token):  # type: ignore[no-untyped-def]
    bad = srcnet("subscriptions", "create", "--project", "BB02", "--src", "AUSRC", token=scientist_token)
    assert bad.code == ExitCode.VALIDATION and "filters.project: " in bad.err, bad.err
    made = srcnet(
        "subscriptions", "create", "--name", "AA01 images", "--project", "AA01", "--type", "continuum_image",
        "--src", "AUSRC", "--lifetime", "90d", "-o", "json", token=scientist_token,
    )  # fmt: skip
    assert made.code == ExitCode.OK, made.err
    subscription = json.loads(made.out)
    # A product registered afterwards (by the operator, through the API) gets its rule.
    created = srcnet(
        "products", "create", "--scope", "ska1-low", "--name", "img-new", "--telescope", "SKA1-Low",
        "--project", "AA01", "--type", "continuum_image", *FILES,
    )  # fmt: skip
    assert created.code == ExitCode.OK, created.err
    rule = Rule.objects.get()
    assert rule.subscription_id == subscription["id"] and [p.name for p in rule.products.all()] == ["img-new"]
    shown = json.loads(
        srcnet("subscriptions", "show", str(subscription["id"]), "-o", "json", token=scientist_token).out
    )
    assert shown["rules"] == [rule.pk]
    assert "AA01 images" in srcnet("subscriptions", "list", token=scientist_token).out
    removed = srcnet("subscriptions", "remove", str(subscription["id"]), token=scientist_token)
    assert removed.code == ExitCode.OK and Rule.objects.count() == 1
