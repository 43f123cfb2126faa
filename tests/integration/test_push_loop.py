"""The scheduler's own loop plans products waiting at a real SDP and pushes them through the embedded FTS3
service (its REST protocol, over HTTP, with the platform's FTS3 transfertool), highest priority first."""

from __future__ import annotations

import pytest

from identity.tokens import issue
from replicas.choices import ProductState, ReplicaState
from replicas.models import PolicyShare, Replica, ReplicaPolicy
from replicas.services import FileSpec, register_product
from schedulers.loop import push_cycle
from schedulers.models import PathMeasurement
from schedulers.planning import PlanConfig
from tests.conftest import wait_until
from topology.models import StorageEndpoint, Telescope
from transfers.models import TransferJob
from transfertools.fts3_rest import Fts3Transfertool

from .conftest import adler32_of, put_file, unique

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
MIB = 1024 * 1024


def test_the_loop_pushes_by_priority_and_learns_the_lane(
    celery_worker, bound_topology, live_server, scheduler_account
):
    telescope = Telescope.objects.get(name="SKA1-Low")
    ReplicaPolicy.objects.filter(telescope=telescope).update(is_active=False)
    # Every product to UKSRC: one lane, so it carries one product at a time and order shows.
    policy = ReplicaPolicy.objects.create(name="low-to-uk", telescope=telescope)
    PolicyShare.objects.create(
        policy=policy, destination=StorageEndpoint.objects.get(name="UKSRC_DISK"), weight=1
    )
    from topology.models import RegionalCentre

    RegionalCentre.objects.exclude(name="UKSRC").update(share_weight=0)
    sdp = bound_topology["SKA1-LOW_SDP"]
    products = {}
    for priority in (1, 5, 3):
        name = unique(f"loop-p{priority}")
        checksum = put_file(sdp, f"ska/{name}/f.ms", 2 * MIB)
        products[priority] = register_product(
            scope="ska",
            name=name,
            telescope=telescope,
            priority=priority,
            files=[FileSpec("f.ms", 2 * MIB, checksum)],
        )
    token = issue(scheduler_account, name="test", scope="fts3")[1]
    tool = Fts3Transfertool(f"{live_server.url}/fts3", token=token, verify=False)
    order: list[int] = []
    per_cycle = []
    # One copy in flight per lane (2 MiB files on the reference topology's 100 Gbit/s lane would otherwise
    # be planned the most copies at once, and the lane deepened to carry all three products at once).
    one_copy = PlanConfig(max_files=1)
    while len(order) < 3:
        cycle = push_cycle(transfertool=tool, config=one_copy)
        assert cycle.error == "" and cycle.legs_submitted >= 1, cycle.submitted
        per_cycle.append(cycle.legs_submitted)
        for entry in cycle.submitted:
            order.append(entry["priority"])
            assert entry["lane"] == ["SKA1-Low", "UKSRC"] and entry["streams"] >= 1
        submitted = [p for p in products.values() if p.priority in order]
        wait_until(lambda s=submitted: all(_placed(p) for p in s), timeout=120, what="the submitted products")
    # One lane carries two products at once (SRCNET_LANE_DEPTH): the first cycle sends the two highest
    # priorities, the next the third, once the lane has room again.
    assert order == [5, 3, 1] and per_cycle == [2, 1]
    for product in products.values():
        replica = product.replicas.get(endpoint__name="UKSRC_DISK")
        assert replica.state == ReplicaState.AVAILABLE and "push plan: SKA1-Low -> UKSRC" in replica.reason
        assert (
            adler32_of(bound_topology["UKSRC_DISK"].local_path(f"srcnet/{product.files.get().relative_path}"))
            == product.files.get().adler32
        )
    # Every push job went through the FTS3 REST endpoint, and each left a measurement of its lane.
    assert TransferJob.objects.filter(metadata__auth_method="oauth2").count() == 3
    assert PathMeasurement.objects.filter(source="SKA1-Low", destination="UKSRC").count() == 3
    assert push_cycle(transfertool=tool).products_queued == 0


def _placed(product) -> bool:  # type: ignore[no-untyped-def]
    product.refresh_from_db()
    return product.state in (ProductState.PLACED, ProductState.FAILED)


def test_two_replicas_make_a_second_verified_copy_from_the_first_src(
    celery_worker, bound_topology, live_server, scheduler_account
):
    """Redistribution: the SDP pushes to UKSRC, then UKSRC copies to its partner AUSRC (third-party copy
    between the two SRCs' XRootD servers), both through the FTS3 endpoint; only then is the product placed."""
    from topology.models import RegionalCentre

    telescope = Telescope.objects.get(name="SKA1-Low")
    ReplicaPolicy.objects.filter(telescope=telescope).update(is_active=False)
    RegionalCentre.objects.exclude(name="UKSRC").update(share_weight=0)
    policy = ReplicaPolicy(
        name="low-uk-then-au", telescope=telescope, kind="two_replicas", partners={"UKSRC": "AUSRC"}
    )
    policy.full_clean()
    policy.save()
    sdp = bound_topology["SKA1-LOW_SDP"]
    name = unique("loop-two")
    checksums = {f: put_file(sdp, f"ska/{name}/{f}", 3 * MIB) for f in ("a.ms", "b.ms")}
    product = register_product(
        scope="ska",
        name=name,
        telescope=telescope,
        files=[FileSpec(f, 3 * MIB, c) for f, c in checksums.items()],
    )
    token = issue(scheduler_account, name="test", scope="fts3")[1]
    tool = Fts3Transfertool(f"{live_server.url}/fts3", token=token, verify=False)

    cycle = push_cycle(transfertool=tool)
    assert cycle.error == "" and [(e["role"], e["lane"]) for e in cycle.submitted] == [
        ("primary", ["SKA1-Low", "UKSRC"])
    ]
    first = product.replicas.get(endpoint__name="UKSRC_DISK")
    second = product.replicas.get(endpoint__name="AUSRC_DISK")
    assert second.state == ReplicaState.PLANNED and second.upstream == first
    wait_until(
        lambda: Replica.objects.get(pk=first.pk).state != ReplicaState.COPYING,
        timeout=120,
        what="the first copy at UKSRC",
    )
    first.refresh_from_db()
    product.refresh_from_db()
    assert first.state == ReplicaState.AVAILABLE, first.reason
    assert product.state == ProductState.PLACING  # one replica of two

    cycle = push_cycle(transfertool=tool)
    assert cycle.error == "" and [(e["role"], e["lane"]) for e in cycle.submitted] == [
        ("second", ["UKSRC", "AUSRC"])
    ]
    job = TransferJob.objects.get(job_id=cycle.submitted[0]["job_id"])
    assert all(
        f.source_surl.startswith(f"root://127.0.0.1:{bound_topology['UKSRC_DISK'].root_port}")
        or f"127.0.0.1:{bound_topology['UKSRC_DISK'].http_port}" in f.source_surl
        for f in job.files.all()
    )
    wait_until(lambda: _placed(product), timeout=120, what=f"{product.did} to be placed")
    assert product.state == ProductState.PLACED
    for replica in (first, second):
        replica.refresh_from_db()
        assert replica.state == ReplicaState.AVAILABLE and replica.reason.endswith("finished"), replica.reason
    assert first.reason.startswith("low-uk-then-au (two_replicas): first copy; push plan: SKA1-Low -> UKSRC")
    assert second.reason.startswith("low-uk-then-au (two_replicas): second copy (redistribution")
    assert "push plan: UKSRC -> AUSRC" in second.reason
    # Both copies are on disk with the adler32 the SDP recorded.
    for endpoint in ("UKSRC_DISK", "AUSRC_DISK"):
        for f in product.files.all():
            path = bound_topology[endpoint].local_path(f"srcnet/{f.relative_path}")
            assert adler32_of(path) == f.adler32, (endpoint, f.name)
    assert PathMeasurement.objects.filter(source="UKSRC", destination="AUSRC").count() == 1
    assert push_cycle(transfertool=tool).legs_submitted == 0
