"""Live re-routing (issue 17, item 8): a long-haul link cut while products are pushed, for real.

SKA1-Low's SDP, UKSRC and AUSRC each in a namespace of their own behind the packet-level emulator (the
reference topology's RTTs, capacities / 1000). SKA1-Low's policy shares its products between UKSRC
(weight 3) and AUSRC (weight 1); the fault bench's worker runs the push loop as deployed (beat every 2 s,
a cycle when a push job ends). While a copy to UKSRC is under way, singapore-london (on the only route
SKA1-Low -> UKSRC) is cut and stays cut: the copy stalls, the executor's no-progress timeout fails each
attempt, the job fails, its product goes back to the SDP queue, the lane is unavailable, and the next
cycles send that product and every one still waiting to AUSRC (SKA1-Low -> AUSRC does not cross the cut).
Nothing is lost (the fault bench's audit), the portal's product page shows the failed lane's reason and
the re-route, the cycles say why. The link is then restored and, after the lane's cool-off, a new product
goes to UKSRC again."""

from __future__ import annotations

import time

import pytest
from django.urls import reverse

from tests.faults.conftest import (
    active_copies,
    assert_nothing_lost,
    partial_at,
    push_products,
    settle_and_audit,
    wait_for,
)
from tests.longhaul.conftest import long_haul, long_haul_plan, long_haul_topology  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.integration, pytest.mark.faults, pytest.mark.timeout(300)]
SDP, UK, AU = "SKA1-LOW_SDP", "UKSRC_DISK", "AUSRC_DISK"
CUT_LINK = "singapore-london"
MIB = 1024 * 1024
STALL_SECONDS, COOL_OFF_SECONDS = 12, 40
# The worker as deployed, with a no-progress timeout and a cool-off short enough for a test.
REROUTE_ENV = {"SRCNET_TRANSFER_STALL": str(STALL_SECONDS), "SRCNET_LANE_COOL_OFF": str(COOL_OFF_SECONDS)}


def shared_policy() -> None:
    """SKA1-Low's products: UKSRC 3, AUSRC 1, over root:// (the plugin's TPC program pulls)."""
    from tests.conftest import policy_of_shares
    from tests.integration.conftest import unique
    from topology.models import StorageEndpoint

    StorageEndpoint.objects.filter(name__in=[UK, AU, SDP]).update(tpc_scheme="root")
    policy_of_shares({UK: 3, AU: 1}, name=f"reroute-{unique('p')}")


def placed_at(product) -> str | None:  # type: ignore[no-untyped-def]
    from replicas.choices import ReplicaState

    row = product.replicas.filter(state=ReplicaState.AVAILABLE).exclude(endpoint__name=SDP).first()
    return row.endpoint.name if row else None


def reroute_events() -> list[str]:
    from schedulers.models import PushCycle

    return [e["detail"] for c in PushCycle.objects.all() for e in c.events if e.get("kind") == "reroute"]


def test_a_cut_link_reroutes_the_products_then_the_lane_comes_back(
    long_haul_topology,  # noqa: F811
    fault_worker,
    settings,
    client,
    scientist,
):
    from replicas.choices import ProductState, ReplicaState
    from replicas.models import DataProduct, Replica

    network = long_haul_topology
    settings.SRCNET_TRANSFERS = {**settings.SRCNET_TRANSFERS, "RETRY_BACKOFF_SECONDS": 3.0}
    # This process runs cycles too (an explicit push runs one at once): the same cool-off as the worker's.
    settings.SRCNET_LANE_HEALTH = {**settings.SRCNET_LANE_HEALTH, "COOL_OFF_SECONDS": COOL_OFF_SECONDS}
    assert CUT_LINK in network.route(SDP, UK) and CUT_LINK not in network.route(SDP, AU)
    shared_policy()
    fault_worker.start(**REROUTE_ENV)
    sdp = {"FAULT-SDP": network.sites[SDP]}
    products = push_products(sdp, 5)
    # Mid-copy to UKSRC: bytes arrive there.
    wait_for(
        lambda: active_copies() and [p for p in partial_at(network.sites[UK]) if p.stat().st_size >= MIB],
        90,
        "a copy to UKSRC under way",
    )
    struck = [
        p
        for p in products
        if DataProduct.objects.get(pk=p.pk)
        .replicas.filter(endpoint__name=UK, state=ReplicaState.COPYING)
        .exists()
    ]
    assert struck  # on the UKSRC lane as it is cut (one or, with SRCNET_LANE_DEPTH, more)
    before = {p.pk for p in products if placed_at(p) == UK}
    queued = [p for p in products if p.pk not in before and p not in struck]
    network.cut(CUT_LINK)
    cut_at = time.monotonic()
    try:
        # The cut link stays cut: every product ends placed, none at UKSRC after the cut.
        report = settle_and_audit(
            f"long-haul link {CUT_LINK} cut mid-copy and left cut: re-routed to AUSRC",
            products,
            network.sites,
            in_flight=len(struck),
            since=cut_at,
            timeout=170,
            by_endpoint=True,
        )
        assert_nothing_lost(report)
        states = {p.did: DataProduct.objects.get(pk=p.pk).state for p in products}
        assert set(states.values()) == {ProductState.PLACED}, states
        where = {p.did: placed_at(p) for p in products}
        assert all(where[p.did] == AU for p in queued), where  # nothing waiting went to the broken lane
    finally:
        network.restore(CUT_LINK)
    # The struck products: their copies to UKSRC failed and stay as history; they went to AUSRC (one
    # whose last bytes were through before the cut bit may have arrived at UKSRC).
    rerouted = [p for p in struck if p.replicas.filter(endpoint__name=UK, state=ReplicaState.FAILED).exists()]
    assert rerouted, {p.did: placed_at(p) for p in struck}
    for product in rerouted:
        reason = product.replicas.get(endpoint__name=UK).reason
        # A copy cut mid-way fails as stalled (the platform's stall watch) or by the destination's own read
        # timeout, whichever comes first (seen: XRootD's "read at offset 8388608 failed: Socket timeout"
        # in its log); its retries, and a copy still opening its source when the link went (the lane's
        # depth puts a second product on it), cannot open the source over the cut link.
        assert "TRANSFER stalled" in reason or "Socket timeout" in reason, reason
        assert "[re-routed] back to the SDP queue" in reason
        assert placed_at(product) == AU
    product = rerouted[0]
    reason = product.replicas.get(endpoint__name=UK).reason
    # The cycles said why, and the portal shows both on the product's page.
    assert any("lane SKA1-Low -> UKSRC unavailable" in e for e in reroute_events()), reroute_events()
    client.force_login(scientist)
    page = client.get(reverse("replicas:product", args=[product.pk])).content.decode()
    cause = "TRANSFER stalled" if "TRANSFER stalled" in reason else "Socket timeout"
    assert cause in page and "[re-routed] back to the SDP queue" in page and AU in page
    # Restored: once the lane's cool-off has passed, the next product goes to UKSRC again (it is far below
    # its share) and arrives.
    from django.utils import timezone

    last_failure = (
        Replica.objects.filter(endpoint__name=UK, state=ReplicaState.FAILED).latest("updated").updated
    )
    time.sleep(max(0.0, COOL_OFF_SECONDS + 1 - (timezone.now() - last_failure).total_seconds()))
    (later,) = push_products(sdp, 1)
    report = settle_and_audit(
        f"long-haul link {CUT_LINK} restored: UKSRC used again",
        [later],
        network.sites,
        in_flight=0,
        since=time.monotonic(),
        timeout=90,
        by_endpoint=True,
    )
    assert_nothing_lost(report)
    later.refresh_from_db()
    assert later.state == ProductState.PLACED and placed_at(later) == UK, (
        list(later.replicas.values("endpoint__name", "state", "reason")),
        reroute_events()[-3:],
    )


def test_a_campaigns_pinned_products_fall_back_to_the_policy_when_their_lane_breaks(
    long_haul_topology,  # noqa: F811
    fault_worker,
    settings,
    operator,
):
    """A real campaign from SKA1-Low to UKSRC only (its products pinned there), run by the worker's loop;
    singapore-london cut mid-copy and left cut: the campaign's products go by SKA1-Low's policy to AUSRC,
    each pin kept as history saying why, and every product is placed."""
    from campaigns.models import Campaign
    from campaigns.services import create_campaign
    from replicas.choices import ProductState, ReplicaState
    from replicas.models import DataProduct

    network = long_haul_topology
    settings.SRCNET_TRANSFERS = {**settings.SRCNET_TRANSFERS, "RETRY_BACKOFF_SECONDS": 3.0}
    settings.SRCNET_LANE_HEALTH = {**settings.SRCNET_LANE_HEALTH, "COOL_OFF_SECONDS": COOL_OFF_SECONDS}
    shared_policy()
    fault_worker.start(**REROUTE_ENV)
    campaign = create_campaign(
        user=operator,
        name="reroute-dc",
        sources=["SKA1-Low"],
        destinations=[UK],
        target_rate_bps=24e6,  # 3 MB/s of 16 MiB products: one every 5.6 s
        ramp_seconds=1,
        duration_seconds=40,
        min_file_bytes=16 * MIB,
        max_file_bytes=16 * MIB,
    )
    uk_data = network.sites[UK].local_path("srcnet/campaign")

    def under_way() -> bool:
        files = [p for p in uk_data.rglob("*") if p.is_file()] if uk_data.exists() else []
        return bool(active_copies()) and any(MIB <= p.stat().st_size < 16 * MIB for p in files)

    wait_for(under_way, 90, "a campaign copy to UKSRC under way")
    network.cut(CUT_LINK)
    cut_at = time.monotonic()
    try:
        wait_for(
            lambda: (
                Campaign.objects.get(pk=campaign.pk).state in (Campaign.State.FINISHED, Campaign.State.FAILED)
            ),
            200,
            "the campaign to end",
        )
        products = list(DataProduct.objects.filter(campaign_link__campaign=campaign))
        report = settle_and_audit(
            f"long-haul link {CUT_LINK} cut under a campaign pinned to UKSRC: re-routed by the policy",
            products,
            network.sites,
            in_flight=1,
            since=cut_at,
            timeout=150,
            by_endpoint=True,
        )
        assert_nothing_lost(report)
    finally:
        network.restore(CUT_LINK)
    states = {p.did: DataProduct.objects.get(pk=p.pk).state for p in products}
    assert set(states.values()) == {ProductState.PLACED}, states
    # The pins the broken lane could not honour: kept as history, saying where the product went instead.
    released = [
        p
        for p in products
        if p.replicas.filter(
            endpoint__name=UK,
            state=ReplicaState.FAILED,
            reason__contains="placed by the telescope's policy at AUSRC instead",
        ).exists()
    ]
    assert released and all(placed_at(p) == AU for p in released)
    assert any("lane SKA1-Low -> UKSRC unavailable" in e for e in reroute_events())
    # The score counts them as re-routed, not failed at UKSRC: the campaign finished, nothing lost.
    gave_up_uk = [p for p in products if p.replicas.filter(endpoint__name=UK, rerouted=True).exists()]
    campaign.refresh_from_db()
    summary = campaign.summary
    assert campaign.state == Campaign.State.FINISHED, campaign.error
    assert summary["failed"] == 0 and summary["rerouted"] == len(gave_up_uk) >= len(released), summary
    assert summary["complete"] == summary["products"] == len(products), summary
