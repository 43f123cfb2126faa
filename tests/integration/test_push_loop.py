"""The scheduler's own loop plans products waiting at a real SDP and pushes them through the embedded FTS3
service (its REST protocol, over HTTP, with the platform's FTS3 transfertool), highest priority first."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token

from replicas.choices import ProductState, ReplicaState
from replicas.models import PolicyShare, ReplicaPolicy
from replicas.services import FileSpec, register_product
from schedulers.fts3_transfertool import Fts3Transfertool
from schedulers.loop import push_cycle
from schedulers.models import PathMeasurement
from tests.conftest import wait_until
from topology.models import StorageEndpoint, Telescope
from transfers.models import TransferJob

from .conftest import adler32_of, put_file, unique

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
MIB = 1024 * 1024


def test_the_loop_pushes_by_priority_and_learns_the_lane(
    celery_worker, bound_topology, live_server, operator
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
    token, _ = Token.objects.get_or_create(user=operator)
    tool = Fts3Transfertool(f"{live_server.url}/fts3", token=token.key, verify=False)
    order = []
    for _ in range(3):
        cycle = push_cycle(transfertool=tool)
        assert cycle.error == "" and cycle.legs_submitted == 1, cycle.submitted
        (entry,) = cycle.submitted
        order.append(entry["priority"])
        assert entry["lane"] == ["SKA1-Low", "UKSRC"] and entry["streams"] >= 1
        product = next(p for p in products.values() if p.did == entry["product"])
        wait_until(lambda p=product: _placed(p), timeout=120, what=f"{product.did} to be placed")
    assert order == [5, 3, 1]
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
