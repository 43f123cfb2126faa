"""Following Rucio outside the demo: the periodic task (enabled when a Rucio server is configured) and
``manage.py rucio_sync`` sync replicas from rules that changed, including rules scientists created."""

from __future__ import annotations

import io
import uuid

import pytest
from django.core.management import call_command

from replicas.choices import ProductState, ReplicaState
from replicas.models import Replica
from replicas.rucio import RucioAdapter, RucioConfig
from replicas.tasks import follow_rucio_rules
from topology.models import StorageEndpoint

from .conftest import FTS_PLACEHOLDER
from .helpers import endpoints, make_product, point_at_loopback

pytestmark = pytest.mark.django_db


@pytest.fixture
def synced(reference_topology, rucio: RucioAdapter) -> list[StorageEndpoint]:
    eps = point_at_loopback()
    rucio.sync_endpoints(eps, fts_url=FTS_PLACEHOLDER)
    return eps


@pytest.fixture
def configured(monkeypatch, rucio_server):  # type: ignore[no-untyped-def]
    for key, value in {
        "URL": rucio_server.url,
        "ACCOUNT": rucio_server.account,
        "USERNAME": rucio_server.username,
        "PASSWORD": rucio_server.password,
    }.items():
        monkeypatch.setenv(f"SRCNET_RUCIO_{key}", value)


def _scientist_rule(rucio: RucioAdapter, rucio_server, scope: str, name: str, rse: str) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    account, password = f"sci{uuid.uuid4().hex[:10]}", uuid.uuid4().hex
    rucio.client.add_account(account, "USER", f"{account}@example.org")
    rucio.client.add_identity(account, account, "USERPASS", f"{account}@example.org", password=password)
    rucio.client.set_local_account_limit(account, rse, -1)
    scientist = RucioAdapter(
        RucioConfig(url=rucio_server.url, account=account, username=account, password=password)
    )
    rule = scientist.client.add_replication_rule(
        [{"scope": scope, "name": name}], 1, rse, activity="SKA User Request", comment="mine"
    )[0]
    return account, rule


def test_the_task_does_nothing_without_a_rucio_server(monkeypatch):
    monkeypatch.delenv("SRCNET_RUCIO_URL", raising=False)
    assert "no Rucio server configured" in follow_rucio_rules()["skipped"]


def test_the_task_follows_changed_rules_and_scientists_own(
    synced, rucio: RucioAdapter, rucio_server, scope, configured
) -> None:
    placing = make_product(scope, "obs-placing")
    rucio.register_product(placing)
    ours = rucio.place_product(placing, endpoints(("UKSRC_DISK",)))
    # Placed long ago as far as the platform knows; a scientist now asks for a copy in Australia.
    placed = make_product(scope, "obs-placed")
    rucio.register_product(placed)
    placed.state = ProductState.PLACED
    placed.save(update_fields=["state"])
    account, theirs = _scientist_rule(rucio, rucio_server, scope, placed.name, "AUSRC_DISK")
    # Registered, no rule: nothing to follow.
    quiet = make_product(scope, "obs-quiet")
    rucio.register_product(quiet)

    result = follow_rucio_rules()
    assert placed.did in result["products"] and quiet.did not in result["products"]
    # Our rule changed (it was made), but its replica already shows it (COPYING, that rule's): not synced
    # again (replicas/rucio_mirrored.py).
    assert placing.did not in result["products"]
    assert not [e for e in result["errors"] if scope in e]
    picked = Replica.objects.get(product=placed, endpoint__name="AUSRC_DISK")
    assert picked.state == ReplicaState.COPYING and picked.policy is None
    assert f"rucio rule {theirs} created by account {account}" in picked.reason
    placed.refresh_from_db()
    assert placed.state == ProductState.PLACING  # a replica is on its way again
    ours_row = Replica.objects.get(product=placing, endpoint__name="UKSRC_DISK")
    assert ours.rule_id in ours_row.reason and ours_row.state == ReplicaState.COPYING

    # The rule's state is followed: Rucio marks our rule STUCK (as its judge does when transfers keep
    # failing); syncing that product from the command line fails its replica and the product.
    rucio.client.update_replication_rule(ours.rule_id, {"state": "STUCK"})
    out = io.StringIO()
    call_command("rucio_sync", placing.did, stdout=out)
    assert f"synced {placing.did}" in out.getvalue()
    ours_row.refresh_from_db()
    placing.refresh_from_db()
    assert ours_row.state == ReplicaState.FAILED and placing.state == ProductState.FAILED

    # Following again changes nothing.
    before = {
        r.pk: (r.state, r.reason, r.updated) for r in Replica.objects.filter(product__in=[placing, placed])
    }
    follow_rucio_rules()
    after = {
        r.pk: (r.state, r.reason, r.updated) for r in Replica.objects.filter(product__in=[placing, placed])
    }
    assert after == before


def test_the_command_syncs_every_product_with_a_rule(synced, rucio: RucioAdapter, scope, configured) -> None:
    product = make_product(scope, "obs-all")
    rucio.register_product(product)
    rucio.place_product(product, endpoints(("AUSRC_DISK",)))
    Replica.objects.filter(product=product, endpoint__name="AUSRC_DISK").delete()
    out = io.StringIO()
    call_command("rucio_sync", "--all", stdout=out)
    assert f"synced {product.did}" in out.getvalue()
    assert Replica.objects.get(product=product, endpoint__name="AUSRC_DISK").state == ReplicaState.COPYING


def test_a_round_while_another_runs_does_nothing(synced, rucio: RucioAdapter, scope, configured) -> None:
    from django.db import connections

    from replicas.tasks import FOLLOW_LOCK

    product = make_product(scope, "obs-scientists")
    rucio.register_product(product)
    product.state = ProductState.PLACED
    product.save(update_fields=["state"])
    rucio.client.add_replication_rule([{"scope": scope, "name": product.name}], 1, "AUSRC_DISK")
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:  # another worker's round holds the lock
            cursor.execute("SELECT pg_try_advisory_lock(%s)", [FOLLOW_LOCK])
            assert cursor.fetchone()[0] is True
        assert "a round is running" in follow_rucio_rules()["skipped"]
        assert not Replica.objects.filter(product=product, endpoint__name="AUSRC_DISK").exists()
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [FOLLOW_LOCK])
    finally:
        other.close()
    assert product.did in follow_rucio_rules()["products"]
    assert Replica.objects.get(product=product, endpoint__name="AUSRC_DISK").state == ReplicaState.COPYING
