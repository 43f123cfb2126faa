"""A scientist's rule made through the platform's REST API in Rucio mode: it becomes a Rucio rule under the
scientist's own Rucio account (made and kept in step by the adapter), Rucio's running daemons carry it out
through the platform's FTS3 endpoint, the bytes land at the destination, and the platform shows the rule
OK. A rule Rucio could not satisfy is refused with a 400 naming the field, and nothing is made in Rucio."""

from __future__ import annotations

import datetime as dt
from email.utils import parsedate_to_datetime

import pytest
from django.utils import timezone

from localnet.rucio import RucioServer
from projects.models import Project
from replicas.rucio import RucioAdapter
from replicas.rucio_accounts import rucio_account_name
from rules.models import Rule

from ..conftest import wait_until
from ..integration.conftest import adler32_of
from .helpers import product_on_disk, rule_outcome

pytestmark = pytest.mark.integration

DESTINATION = "AUSRC_DISK"


def test_a_rule_made_through_the_api_is_the_scientists_own_rucio_rule_and_is_carried_out(  # type: ignore[no-untyped-def]
    rucio_sites,
    rucio: RucioAdapter,
    rucio_mode: RucioServer,
    conveyor_cert,
    scope,
    scientist,
    scientist_client,
):
    product = product_on_disk(rucio_sites, scope, {"image.fits": 256 * 1024, "beam.fits": 64 * 1024})
    rucio.register_product(product)  # as the platform registers what the telescope wrote

    # Refused first, in Rucio as in the platform: a 400 naming the field, nothing made in either. The last
    # case passes the platform's checks (it knows FRSRC_DISK) and Rucio refuses it (no such RSE there).
    hidden = product_on_disk(rucio_sites, scope, {"secret.fits": 1024})
    hidden.project = Project.objects.create(code=f"P{scope[:8]}")
    hidden.proprietary_until = timezone.now() + dt.timedelta(days=30)
    hidden.save()
    bad = [
        ({"product": f"{scope}:no-such-product", "rse_expression": DESTINATION}, "product"),
        ({"product": hidden.did, "rse_expression": DESTINATION}, "product"),
        ({"product": product.did, "rse_expression": "country=XX"}, "rse_expression"),
        ({"product": product.did, "rse_expression": DESTINATION, "copies": 2}, "copies"),
        ({"product": product.did, "rse_expression": DESTINATION, "lifetime": -1}, "lifetime"),
        ({"filters": {"project": hidden.project.code}, "rse_expression": DESTINATION}, "filters.project"),
        ({"product": product.did, "rse_expression": "FRSRC_DISK"}, "rse_expression"),
    ]
    for body, field in bad:
        answer = scientist_client.post("/api/rules/rules/", body, format="json")
        assert answer.status_code == 400 and field in answer.json(), (body, answer.content)
    assert "unknown to Rucio" in str(answer.json()["rse_expression"])  # Rucio's refusal, on its field
    assert Rule.objects.count() == 0
    assert list(rucio.client.list_did_rules(scope, product.name)) == []
    account = rucio_account_name(scientist)
    assert [a for a in rucio.client.list_accounts() if a["account"] == account] == []

    answer = scientist_client.post(
        "/api/rules/rules/",
        {"product": product.did, "rse_expression": DESTINATION, "lifetime": 86400, "comment": "my map"},
        format="json",
    )
    assert answer.status_code == 201, answer.content
    made = answer.json()
    assert made["rucio_account"] == account
    rule_id = made["rucio_rules"][product.did]
    rule = rucio.rule(rule_id)
    assert (rule.account, rule.activity, rule.copies, rule.rse_expression) == (
        account,
        "SKA User Request",
        1,
        DESTINATION,
    )
    assert rule.expires_at is not None
    assert rucio.client.get_account(account)["account_type"] == "USER"
    # The account follows its user: deactivated on the platform, suspended in Rucio; active again, active.
    scientist.is_active = False
    scientist.save()
    assert str(rucio.client.get_account(account)["status"]) == "SUSPENDED"
    scientist.is_active = True
    scientist.email = "alice@example.org"
    scientist.save()
    shown_account = rucio.client.get_account(account)
    assert (str(shown_account["status"]), shown_account["email"]) == ("ACTIVE", "alice@example.org")

    # No further step: Rucio's daemons carry the rule out; the bytes are there, checksums right.
    assert rule_outcome(rucio, rule_id, timeout=150) == "OK"
    for f in product.files.all():
        copy = rucio_sites[DESTINATION].local_path(f"srcnet/{f.relative_path}")
        assert copy.stat().st_size == f.size_bytes
        assert adler32_of(copy) == f.adler32

    # The platform follows the Rucio rule (the worker's beat) and shows the scientist's rule OK.
    def shown_ok() -> dict[str, object] | None:
        shown = scientist_client.get(f"/api/rules/rules/{made['id']}/").json()
        return shown if shown["state"] == "OK" else None

    shown = wait_until(shown_ok, timeout=60, what="the platform to show the rule OK")
    assert [(c["endpoint"], c["state"]) for c in shown["copies_made"]] == [(DESTINATION, "available")]
    # Where is my data: the product's page lists the conveyor's job at the platform's FTS3 endpoint.
    page = scientist_client.get(f"/api/replicas/products/{product.pk}/").json()
    assert [(t["state"], t["destinations"], t["files"]) for t in page["transfers"]] == [
        ("FINISHED", [DESTINATION], 2)
    ], page["transfers"]

    # Removed through the platform: Rucio deletes the rule as it does for its own client (a soft delete:
    # the rule expires within the hour and Rucio's cleaner removes it).
    assert scientist_client.delete(f"/api/rules/rules/{made['id']}/").status_code == 204
    assert not Rule.objects.exists()
    expires = rucio.rule(rule_id).expires_at
    expires = expires if isinstance(expires, dt.datetime) else parsedate_to_datetime(str(expires))
    assert expires.replace(tzinfo=dt.UTC) <= dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
