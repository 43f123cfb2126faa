"""Storage consistency in Rucio mode (issue 36, item 3): a replica of a Rucio rule found lost at its
storage is declared bad to Rucio, as Rucio expects it; Rucio's own necromancer and conveyor copy it again
(through the platform's FTS3 endpoint), and the platform's view follows the rule."""

from __future__ import annotations

import pytest

from consistency.checker import run_check
from consistency.choices import CheckMode, FindingAction, FindingKind
from consistency.models import ConsistencyCheck
from replicas.choices import ProductState, ReplicaState
from replicas.models import Replica
from topology.models import StorageEndpoint

from ..conftest import wait_until
from ..integration.conftest import adler32_of
from .helpers import followed, product_on_disk, rule_outcome

pytestmark = pytest.mark.integration


def test_a_lost_replica_of_a_rule_is_declared_bad_and_rucio_copies_it_again(  # type: ignore[no-untyped-def]
    rucio_sites, rucio, rucio_mode, conveyor_cert, scope
):
    product = product_on_disk(rucio_sites, scope, {"a.ms": 128 * 1024, "b.ms": 64 * 1024})
    rucio.register_product(product)
    uk = StorageEndpoint.objects.get(name="UKSRC_DISK")
    rule = rucio.place_product(product, [uk], activity="SKA Data Products")
    assert rule_outcome(rucio, rule.rule_id, timeout=150) == "OK"
    followed(product, ProductState.PLACED)
    replica = Replica.objects.get(product=product, endpoint=uk)
    assert replica.state == ReplicaState.AVAILABLE and replica.rucio_rule == rule.rule_id
    lost = product.files.get(name="a.ms")
    on_disk = rucio_sites["UKSRC_DISK"].local_path(f"srcnet/{lost.relative_path}")
    on_disk.unlink()

    check = run_check(ConsistencyCheck.objects.create(endpoint=uk, mode=CheckMode.STAT))
    assert (check.lost, check.corrupt) == (1, 0)
    finding = check.findings.get()
    assert (finding.kind, finding.action) == (FindingKind.LOST, FindingAction.RUCIO)
    replica.refresh_from_db()
    assert replica.state == ReplicaState.LOST  # marked at once, whatever Rucio does next
    # The rule still says OK until Rucio's necromancer acts on the declaration: following it now (as the
    # worker's beat may at any moment) must not show the lost replica available again.
    rucio.sync_product(product)
    replica.refresh_from_db()
    assert replica.state != ReplicaState.AVAILABLE, replica.reason
    # Rucio's necromancer re-queues the copy from the SDP's replica; its conveyor carries it. Nothing else
    # in Rucio copies a file again to an RSE where its catalogue holds the replica AVAILABLE: the copy is
    # the declaration's doing.
    wait_until(
        lambda: on_disk.exists() and adler32_of(on_disk) == lost.adler32,
        timeout=180,
        what="Rucio to copy the lost file again",
    )
    assert rule_outcome(rucio, rule.rule_id, timeout=120) == "OK"

    # And the platform's view follows the repaired rule (the worker's beat follows Rucio's rules).
    def available_again() -> bool:
        replica.refresh_from_db()
        return replica.state == ReplicaState.AVAILABLE

    wait_until(available_again, timeout=120, what="the platform's replica to follow the repaired rule")
    product.refresh_from_db()
    assert product.state == ProductState.PLACED
