"""Data products as DIDs, placements as rules, rules others created picked up, and bad input refused."""

from __future__ import annotations

import uuid

import pytest

from replicas.choices import ProductState, ReplicaState
from replicas.models import DataProduct, ProductFile, Replica
from replicas.rucio import RucioAdapter, RucioAdapterError, RucioConfig
from replicas.rucio_sync import file_did_name
from topology.models import StorageEndpoint

from .conftest import FTS_PLACEHOLDER
from .helpers import endpoints, make_product, point_at_loopback

pytestmark = pytest.mark.django_db


@pytest.fixture
def synced(reference_topology, rucio: RucioAdapter) -> list[StorageEndpoint]:
    eps = point_at_loopback()
    rucio.sync_endpoints(eps, fts_url=FTS_PLACEHOLDER)
    return eps


def _dest(*names: str) -> list[StorageEndpoint]:
    return endpoints(names)


def test_product_becomes_dataset_with_files_and_sdp_replicas(synced, rucio: RucioAdapter, scope) -> None:
    product = make_product(scope, files=3, size=2048)
    dids = rucio.register_product(product)
    assert dids.created and dids.source_rse == "SKA1-LOW_SDP"
    did = rucio.client.get_did(scope, product.name)
    assert did["type"] == "DATASET"
    files = {f["name"]: f for f in rucio.client.list_files(scope, product.name)}
    expected = {f"{product.name}/{f.name}": f for f in product.files.all()}
    assert set(files) == set(expected)
    for name, row in expected.items():
        assert files[name]["bytes"] == row.size_bytes
        assert files[name]["adler32"] == row.adler32
    replicas = rucio.product_replicas(product)
    assert replicas == {name: {"SKA1-LOW_SDP": "AVAILABLE"} for name in expected}
    # Rucio's path for each file is where the platform keeps it: <prefix><scope>/<product>/<file>
    sdp = StorageEndpoint.objects.get(name="SKA1-LOW_SDP")
    first = product.files.first()
    assert first is not None
    pfn = rucio.pfn("SKA1-LOW_SDP", scope, f"{product.name}/{first.name}")
    assert (
        pfn
        == f"root://127.0.0.1:{sdp.root_port}//srcnet/{first.relative_path}"
        == sdp.url("root", first.relative_path)
    )
    davs = rucio.pfn("SKA1-LOW_SDP", scope, f"{product.name}/{first.name}", scheme="davs")
    assert davs == sdp.url("davs", first.relative_path)
    # registering again changes nothing
    assert rucio.register_product(product).created is False


def test_policy_destinations_become_one_rule(synced, rucio: RucioAdapter, scope) -> None:
    product = make_product(scope)
    rucio.register_product(product)
    rule = rucio.place_product(
        product, _dest("UKSRC_DISK", "AUSRC_DISK"), activity="SKA Data Products", lifetime=86400
    )
    assert rule.rse_expression == "AUSRC_DISK|UKSRC_DISK"
    assert rule.copies == 2
    assert rule.activity == "SKA Data Products"
    assert rule.priority == product.priority == 4
    assert rule.source_replica_expression == "SKA1-LOW_SDP"
    assert rule.expires_at is not None
    assert rule.state == "REPLICATING"
    assert set(rule.locks) == {"UKSRC_DISK", "AUSRC_DISK"}
    assert rule.ours
    raw = rucio.client.get_replication_rule(rule.rule_id)
    assert raw["grouping"] == "DATASET" and raw["account"] == "root"
    replicas = {
        r.endpoint.name: r for r in Replica.objects.filter(product=product).select_related("endpoint")
    }
    assert set(replicas) == {"SKA1-LOW_SDP", "UKSRC_DISK", "AUSRC_DISK"}
    for name in ("UKSRC_DISK", "AUSRC_DISK"):
        assert replicas[name].state == ReplicaState.COPYING
        assert rule.rule_id in replicas[name].reason
    assert replicas["SKA1-LOW_SDP"].state == ReplicaState.AVAILABLE
    product.refresh_from_db()
    assert product.state == ProductState.PLACING
    # one copy out of two destinations: Rucio picks one, the replica is recorded there only
    other = make_product(scope, name="obs-0002")
    rucio.register_product(other)
    one = rucio.place_product(
        other, _dest("UKSRC_DISK", "AUSRC_DISK"), copies=1, activity="SKA Data Challenge"
    )
    assert one.copies == 1 and one.activity == "SKA Data Challenge" and len(one.locks) == 1
    assert Replica.objects.filter(product=other).exclude(endpoint__name="SKA1-LOW_SDP").count() == 1


@pytest.mark.parametrize("activity", ["SKA Data Products", "SKA Data Challenge", "User Subscriptions"])
def test_ska_and_generic_activities_are_accepted(synced, rucio: RucioAdapter, scope, activity) -> None:
    product = make_product(scope)
    rucio.register_product(product)
    rule = rucio.place_product(product, _dest("UKSRC_DISK"), activity=activity)
    assert rucio.client.get_replication_rule(rule.rule_id)["activity"] == activity


def test_unknown_activity_is_refused_and_nothing_recorded(synced, rucio: RucioAdapter, scope) -> None:
    product = make_product(scope)
    rucio.register_product(product)
    with pytest.raises(RucioAdapterError, match="Bogus Activity"):
        rucio.place_product(product, _dest("UKSRC_DISK"), activity="Bogus Activity")
    assert rucio.product_rules(product) == []
    assert not Replica.objects.filter(product=product, endpoint__name="UKSRC_DISK").exists()


def test_scientist_created_rule_is_picked_up(synced, rucio: RucioAdapter, rucio_server, scope) -> None:
    product = make_product(scope)
    rucio.register_product(product)
    ours = rucio.place_product(product, _dest("UKSRC_DISK"))
    account = f"sci{uuid.uuid4().hex[:10]}"
    password = uuid.uuid4().hex
    rucio.client.add_account(account, "USER", f"{account}@example.org")
    rucio.client.add_identity(account, account, "USERPASS", f"{account}@example.org", password=password)
    rucio.client.set_local_account_limit(account, "AUSRC_DISK", -1)
    scientist = RucioAdapter(
        RucioConfig(url=rucio_server.url, account=account, username=account, password=password)
    )
    theirs = scientist.client.add_replication_rule(
        [{"scope": scope, "name": product.name}],
        1,
        "AUSRC_DISK",
        activity="SKA User Request",
        comment="I want it in Australia",
    )[0]
    rules = {r.rule_id: r for r in rucio.product_rules(product)}
    assert set(rules) == {ours.rule_id, theirs}
    assert rules[theirs].account == account and not rules[theirs].ours
    touched = rucio.sync_product(product)
    assert {r.endpoint.name for r in touched} == {"UKSRC_DISK", "AUSRC_DISK"}
    picked = Replica.objects.get(product=product, endpoint__name="AUSRC_DISK")
    assert picked.state == ReplicaState.COPYING
    assert picked.policy is None
    assert f"rucio rule {theirs} created by account {account}" in picked.reason
    ours_row = Replica.objects.get(product=product, endpoint__name="UKSRC_DISK")
    assert ours.rule_id in ours_row.reason and "created by account" not in ours_row.reason
    # following again is stable
    rucio.sync_product(product)
    assert Replica.objects.get(pk=picked.pk).reason == picked.reason


def test_unknown_rse_is_refused_and_leaves_nothing(synced, rucio: RucioAdapter, scope) -> None:
    product = make_product(scope)
    rucio.register_product(product)
    before = set(Replica.objects.filter(product=product).values_list("endpoint__name", "state"))
    fr = StorageEndpoint.objects.get(name="FRSRC_DISK")  # in the topology, never synced to Rucio
    with pytest.raises(RucioAdapterError, match="RSE 'FRSRC_DISK' is unknown to Rucio"):
        rucio.place_product(product, [fr, *_dest("UKSRC_DISK")])
    assert rucio.product_rules(product) == []
    assert set(Replica.objects.filter(product=product).values_list("endpoint__name", "state")) == before
    product.refresh_from_db()
    assert product.state == ProductState.REGISTERED


def test_bad_did_names_are_refused_before_anything_is_created(synced, rucio: RucioAdapter, scope) -> None:
    good = make_product(scope)
    bad = DataProduct.objects.create(
        scope=scope, name="bad name!", telescope=good.telescope, source=good.source, priority=3
    )
    ProductFile.objects.create(product=bad, name="a.ms", size_bytes=1, adler32="00000001")
    with pytest.raises(RucioAdapterError, match="DID name 'bad name!' is not a valid Rucio name"):
        rucio.register_product(bad)
    assert scope not in rucio.client.list_scopes()  # not even the scope was created
    bad_file = make_product(scope, name="obs-badfile")
    ProductFile.objects.create(product=bad_file, name="x y.ms", size_bytes=1, adler32="00000001")
    with pytest.raises(RucioAdapterError, match=r"DID name 'obs-badfile/x y.ms' is not a valid"):
        rucio.register_product(bad_file)
    assert scope not in rucio.client.list_scopes()


def test_product_from_an_unsynced_sdp_is_refused(reference_topology, rucio: RucioAdapter, scope) -> None:
    from replicas.services import FileSpec, register_product
    from topology.models import Telescope

    mid = Telescope.objects.get(name="SKA1-Mid")
    if rucio.rse_exists("SKA1-MID_SDP"):
        pytest.fail("SKA1-MID_SDP must not be synced by these tests")
    product = register_product(
        scope=scope, name="mid-obs", telescope=mid, files=[FileSpec("a.ms", 10, "0000000a")]
    )
    with pytest.raises(RucioAdapterError, match="RSE 'SKA1-MID_SDP' is unknown to Rucio"):
        rucio.register_product(product)
    assert scope not in rucio.client.list_scopes()


def test_placing_an_unregistered_product_is_refused(synced, rucio: RucioAdapter, scope) -> None:
    product = make_product(scope)
    with pytest.raises(RucioAdapterError, match="is not registered in Rucio"):
        rucio.place_product(product, _dest("UKSRC_DISK"))
    assert not Replica.objects.filter(product=product, endpoint__name="UKSRC_DISK").exists()


def test_policy_decision_becomes_a_rule_under_that_policy(synced, rucio: RucioAdapter, scope) -> None:
    from replicas.models import PolicyShare, ReplicaPolicy
    from replicas.services import place_product

    product = make_product(scope)
    policy = ReplicaPolicy.objects.create(name=f"low-to-au-{scope}", telescope=product.telescope)
    PolicyShare.objects.create(
        policy=policy, destination=StorageEndpoint.objects.get(name="AUSRC_DISK"), weight=1
    )
    [planned] = place_product(product=product)
    assert planned.state == ReplicaState.PLANNED and planned.endpoint.name == "AUSRC_DISK"
    rucio.register_product(product)
    rule = rucio.place_planned(product, activity="SKA Data Products")
    assert rule.rse_expression == "AUSRC_DISK" and rule.copies == 1
    assert rule.comment == f"srcnet: policy {policy.name}"
    planned.refresh_from_db()
    assert planned.state == ReplicaState.COPYING and planned.policy == policy
    assert rule.rule_id in planned.reason
    with pytest.raises(RucioAdapterError, match="no planned replica"):
        rucio.place_planned(product)


def _two_replicas_product(scope: str) -> tuple[DataProduct, Replica, Replica]:
    """A product placed by a two-replicas policy: first copy UKSRC_DISK, its partner AUSRC_DISK."""
    from replicas.models import PolicyShare, ReplicaPolicy
    from schedulers.services import place_by_policy

    product = make_product(scope)
    ReplicaPolicy.objects.filter(telescope=product.telescope).update(is_active=False)
    policy = ReplicaPolicy.objects.create(
        name=f"low-pairs-{scope}",
        telescope=product.telescope,
        kind="two_replicas",
        partners={"UKSRC": "AUSRC"},
    )
    PolicyShare.objects.create(
        policy=policy, destination=StorageEndpoint.objects.get(name="UKSRC_DISK"), weight=1
    )
    place_by_policy(product=product)
    first = product.replicas.get(endpoint__name="UKSRC_DISK")
    second = product.replicas.get(endpoint__name="AUSRC_DISK")
    assert second.state == ReplicaState.PLANNED and second.upstream == first
    return product, first, second


def test_a_second_copy_becomes_its_own_rule_from_the_first_srcs_replica(
    synced, rucio: RucioAdapter, scope
) -> None:
    product, first, second = _two_replicas_product(scope)
    rucio.register_product(product)
    # The files are already at UKSRC_DISK as far as Rucio knows, so the first rule is satisfied at once
    # (no transfer needed: this test is about the rules, tests/rucio/test_transfers.py moves bytes).
    files = [
        {
            "scope": scope,
            "name": file_did_name(product.name, f.name),
            "bytes": f.size_bytes,
            "adler32": f.adler32,
        }
        for f in product.files.all()
    ]
    rucio.client.add_replicas(rse="UKSRC_DISK", files=files)
    rule = rucio.place_planned(product, activity="SKA Data Products")
    assert rule.rse_expression == "UKSRC_DISK" and rule.copies == 1  # the first copy only, from the SDP
    second.refresh_from_db()
    assert second.state == ReplicaState.PLANNED  # waits for the first copy
    rucio.sync_product(product)
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.state == ReplicaState.AVAILABLE
    [partner_rule] = [r for r in rucio.product_rules(product) if r.rse_expression == "AUSRC_DISK"]
    raw = rucio.client.get_replication_rule(partner_rule.rule_id)
    assert raw["source_replica_expression"] == "UKSRC_DISK"  # from the SRC, not the SDP
    assert partner_rule.comment == f"srcnet: policy low-pairs-{scope}"
    assert second.state == ReplicaState.COPYING and partner_rule.rule_id in second.reason
    product.refresh_from_db()
    assert product.state == ProductState.PLACING
    rucio.sync_product(product)  # again: no second rule for the same copy
    assert len(rucio.product_rules(product)) == 2


def test_a_second_copy_fails_with_its_first(synced, rucio: RucioAdapter, scope) -> None:
    product, first, second = _two_replicas_product(scope)
    rucio.register_product(product)
    rule = rucio.place_planned(product)
    rucio.client.update_replication_rule(rule.rule_id, {"state": "STUCK"})  # as the judge marks it
    rucio.sync_product(product)
    first.refresh_from_db()
    second.refresh_from_db()
    product.refresh_from_db()
    assert first.state == ReplicaState.FAILED and second.state == ReplicaState.FAILED
    assert second.reason.endswith("not made: its source copy at UKSRC_DISK failed")
    assert product.state == ProductState.FAILED
    assert [r.rse_expression for r in rucio.product_rules(product)] == ["UKSRC_DISK"]
