"""The real campaign's score from the replicas its products have: complete at the destination, failed there,
or given up for another SRC when the pinned lane broke (re-routed), which is no failure once it is placed."""

from __future__ import annotations

import pytest

from campaigns.models import Campaign, CampaignProduct
from campaigns.services import create_campaign, score
from replicas.choices import ProductState, ReplicaState
from replicas.models import DataProduct, Replica
from replicas.services import REROUTED
from tests.factories import product_at_sdp
from topology.models import StorageEndpoint

pytestmark = pytest.mark.django_db
UK, AU = "UKSRC_DISK", "AUSRC_DISK"


def _campaign(operator) -> Campaign:  # type: ignore[no-untyped-def]
    return create_campaign(
        user=operator,
        name="score-dc",
        sources=["SKA1-Low"],
        destinations=[UK],
        target_rate_bps=8e6,
        ramp_seconds=1,
        duration_seconds=10,
        min_file_bytes=1024,
        max_file_bytes=1024,
    )


def _product(
    c: Campaign, index: int, size: int, state: str, replicas: dict[str, tuple[str, str]]
) -> DataProduct:
    product = product_at_sdp(
        f"score-{index}", scope="campaign", sizes=[size], file_names=[f"score-{index}.dat"]
    )
    CampaignProduct.objects.create(campaign=c, product=product, destination=UK, index=index, size_bytes=size)
    for endpoint, (replica_state, reason) in replicas.items():
        Replica.objects.create(
            product=product,
            endpoint=StorageEndpoint.objects.get(name=endpoint),
            state=replica_state,
            reason=reason,
            rerouted=REROUTED in reason,  # as the platform keeps a re-route's history: said and flagged
        )
    DataProduct.objects.filter(pk=product.pk).update(state=state)
    return product


def test_a_product_rerouted_and_placed_elsewhere_is_complete_not_failed(reference_topology, operator) -> None:
    c = _campaign(operator)
    pin_given_up = f"campaign score-dc; {REROUTED} not copied: lane SKA1-Low -> UKSRC unavailable"
    _product(c, 0, 100, ProductState.PLACED, {UK: (ReplicaState.AVAILABLE, "campaign score-dc")})
    _product(c, 1, 200, ProductState.PLACED, {UK: (ReplicaState.FAILED, pin_given_up), AU: ("available", "")})
    _product(c, 2, 400, ProductState.FAILED, {UK: (ReplicaState.FAILED, "transfer job x FAILED: SOURCE")})
    _product(c, 3, 800, ProductState.PLACING, {UK: (ReplicaState.FAILED, pin_given_up), AU: ("copying", "")})
    _product(c, 4, 1600, ProductState.FAILED, {UK: (ReplicaState.FAILED, pin_given_up), AU: ("failed", "")})

    s = score(c)
    uk = s["per_destination"][UK]
    assert (uk["complete"], uk["rerouted"], uk["failed"]) == (1, 1, 2)
    # Bytes at the destination itself, and overall what reached an SRC: the re-routed product's too.
    assert uk["achieved"] == 100 and s["achieved_bytes"] == 300 and uk["offered"] == 3100
    # The one still moving elsewhere is neither: a campaign drains (complete + failed = products) after it.
    assert (s["products"], s["complete"], s["rerouted"], s["failed"]) == (5, 2, 1, 2)
    assert s["success_rate"] == 0.5
    assert len([v for v in s["latency_seconds"].values() if v is not None]) == 3
