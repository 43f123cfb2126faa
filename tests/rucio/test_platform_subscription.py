"""A scientist's subscription made through the platform's REST API in Rucio mode is a Rucio subscription
under the scientist's own account: Rucio's transmogrifier makes the rule for a new dataset of their project
and type (not for another type), Rucio's daemons carry it out, and the platform follows it."""

from __future__ import annotations

import pytest

from localnet.rucio import RucioServer
from projects.models import Project
from replicas.models import DataProduct
from replicas.rucio import RucioAdapter
from replicas.rucio_accounts import rucio_account_name
from rules.models import Subscription

from ..conftest import wait_until
from ..integration.conftest import adler32_of
from .helpers import product_on_disk, rule_outcome

pytestmark = pytest.mark.integration

DESTINATION = "AUSRC_DISK"


def test_a_subscription_is_the_scientists_rucio_subscription_and_its_rules_are_carried_out(  # type: ignore[no-untyped-def]
    rucio_sites,
    rucio: RucioAdapter,
    rucio_mode: RucioServer,
    conveyor_cert,
    scope,
    scientist,
    scientist_client,
):
    project = Project.objects.create(code=f"S{scope[:10]}")
    project.members.add(scientist)
    body = {"filters": {"telescope": "SKA1-Low"}, "srcs": ["AUSRC"]}
    answer = scientist_client.post("/api/rules/subscriptions/", body, format="json")
    assert answer.status_code == 400 and "filters.project" in answer.json(), answer.content  # Rucio mode
    body["filters"] = {"project": project.code, "product_type": "continuum_image"}
    answer = scientist_client.post("/api/rules/subscriptions/", {**body, "lifetime": 86400}, format="json")
    assert answer.status_code == 201, answer.content
    made = answer.json()
    account = rucio_account_name(scientist)
    assert made["rucio_account"] == account and made["rucio_subscription"]
    [listed] = list(rucio.client.list_subscriptions(name=f"srcnet-{made['id']}", account=account))
    assert listed["account"] == account

    def registered(kind: str) -> DataProduct:
        product = product_on_disk(rucio_sites, scope, {"image.fits": 128 * 1024})
        DataProduct.objects.filter(pk=product.pk).update(project=project, product_type=kind)
        product.refresh_from_db()
        rucio.register_product(product)  # its dataset carries project, datatype and telescope
        return product

    other = registered("visibilities")
    image = registered("continuum_image")

    def rule_made() -> str | None:
        rules = list(rucio.client.list_did_rules(scope, image.name))
        return str(rules[0]["id"]) if rules else None

    rule_id = wait_until(rule_made, timeout=90, interval=1, what="the transmogrifier's rule")
    rule = rucio.rule(rule_id)
    assert (rule.account, rule.rse_expression, rule.activity) == (account, DESTINATION, "SKA User Request")
    assert rule_outcome(rucio, rule_id, timeout=150) == "OK"
    for f in image.files.all():
        assert adler32_of(rucio_sites[DESTINATION].local_path(f"srcnet/{f.relative_path}")) == f.adler32
    assert list(rucio.client.list_did_rules(scope, other.name)) == []  # another type: no rule

    # The platform follows the rule into the product's replica.
    def followed() -> bool:
        return image.replicas.filter(endpoint__name=DESTINATION, state="available").exists()

    wait_until(followed, timeout=60, what="the platform to follow the subscription's rule")
    assert scientist_client.delete(f"/api/rules/subscriptions/{made['id']}/").status_code == 204
    assert not Subscription.objects.exists()
    [stopped] = list(rucio.client.list_subscriptions(name=f"srcnet-{made['id']}", account=account))
    assert stopped["state"] == "INACTIVE"
