"""End to end: Rucio rules carried out by Rucio's running daemons through the platform's FTS3 service.

Real pieces only: the Rucio server (gunicorn, PostgreSQL) and its daemons (conveyor submitter, poller,
finisher; judge evaluator, repairer) as long-running processes, the platform's FTS3 REST service over
HTTPS with the conveyor's client certificate, its Celery worker copying between real XRootD servers, and
the worker's beat following the rules into the platform's replicas. The tests make rules and wait.
"""

from __future__ import annotations

import pytest

from replicas.choices import ProductState, ReplicaState
from replicas.models import DataProduct, Replica
from replicas.rucio import RucioAdapter
from topology.models import StorageEndpoint

from ..conftest import wait_until
from ..integration.conftest import adler32_of
from .helpers import product_on_disk

pytestmark = pytest.mark.integration


def rule_outcome(rucio: RucioAdapter, rule_id: str, *, timeout: float) -> str:
    """The state a rule reaches once it leaves REPLICATING (its daemons at work), within ``timeout``."""

    def settled() -> str | None:
        state = rucio.rule(rule_id).state
        return None if state == "REPLICATING" else state

    return str(
        wait_until(settled, timeout=timeout, interval=0.5, what=f"rule {rule_id} to leave REPLICATING")
    )


def followed(product: DataProduct, state: str, *, timeout: float = 60) -> DataProduct:
    """Wait until the platform's follower (the worker's beat) has brought the product to ``state``."""

    def reached() -> DataProduct | None:
        product.refresh_from_db()
        return product if product.state == state else None

    return wait_until(reached, timeout=timeout, what=f"{product.did} to be {state} in the platform")  # type: ignore[no-any-return]


def test_rule_with_two_copies_goes_replicating_to_ok(rucio_sites, rucio, conveyor_cert, scope):  # type: ignore[no-untyped-def]
    product = product_on_disk(rucio_sites, scope, {"a.ms": 256 * 1024, "b.ms": 64 * 1024})
    rucio.register_product(product)
    dests = list(StorageEndpoint.objects.filter(name__in=["UKSRC_DISK", "AUSRC_DISK"]))
    rule = rucio.place_product(product, dests, activity="SKA Data Products")
    assert rule.state == "REPLICATING" and rule.copies == 2
    assert rule_outcome(rucio, rule.rule_id, timeout=150) == "OK"
    followed(product, ProductState.PLACED)
    for dest in ("UKSRC_DISK", "AUSRC_DISK"):
        replica = Replica.objects.get(product=product, endpoint__name=dest)
        assert replica.state == ReplicaState.AVAILABLE, replica.reason
        assert rule.rule_id in replica.reason
        for f in product.files.all():
            copy = rucio_sites[dest].local_path(f"srcnet/{f.relative_path}")
            assert copy.stat().st_size == f.size_bytes
            assert adler32_of(copy) == f.adler32
    states = rucio.product_replicas(product)
    assert all(set(s.values()) == {"AVAILABLE"} and len(s) == 3 for s in states.values()), states


def test_missing_source_file_fails_the_request_with_its_reason(  # type: ignore[no-untyped-def]
    rucio_sites, rucio, conveyor_cert, scope
):
    product = product_on_disk(rucio_sites, scope, {"gone.ms": 4096}, missing=("gone.ms",))
    rucio.register_product(product)
    dest = StorageEndpoint.objects.get(name="UKSRC_DISK")
    rule = rucio.place_product(product, [dest])
    assert rule_outcome(rucio, rule.rule_id, timeout=200) == "STUCK"
    errors = rucio.transfer_errors(rule.rule_id)
    assert "SOURCE" in errors["UKSRC_DISK"], errors
    followed(product, ProductState.FAILED)
    replica = Replica.objects.get(product=product, endpoint=dest)
    assert replica.state == ReplicaState.FAILED
    assert rule.rule_id in replica.reason and "STUCK" in replica.reason
    # the FTS3 service's reason travels through Rucio's request into the replica's reason
    assert "TRANSFER_FAILED" in replica.reason and "No such file" in replica.reason, replica.reason
    assert not rucio_sites["UKSRC_DISK"].local_path(f"srcnet/{scope}/{product.name}/gone.ms").exists()
    states = rucio.product_replicas(product)
    assert all("UKSRC_DISK" not in s or s["UKSRC_DISK"] != "AVAILABLE" for s in states.values()), states
