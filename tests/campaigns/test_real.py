"""A short real campaign: synthetic files written at the SDP's XRootD server, pushed by the real worker,
scored; its achieved bytes are the bytes found at the destinations with verified checksums."""

from __future__ import annotations

import time

import pytest

from campaigns.models import Campaign
from campaigns.services import clean_up, create_campaign, product_prefix, resume, stop
from replicas.models import ProductFile
from tests.conftest import wait_until
from tests.integration.conftest import adler32_of

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
MIB = 1024 * 1024


def test_a_real_campaign_delivers_what_it_reports(
    celery_worker, bound_topology, operator, settings, tmp_path
):
    destinations = ["UKSRC_DISK", "AUSRC_DISK"]
    # Autocommit (transactional test): the on-commit hook enqueues the first tick on the real worker.
    campaign = create_campaign(
        user=operator,
        name="real-dc",
        sources=["SKA1-Low"],
        destinations=destinations,
        target_rate_bps=16e6,  # 2 MB/s: about 8 products of 1-4 MiB over 8 s
        ramp_seconds=2,
        duration_seconds=8,
        min_file_bytes=MIB,
        max_file_bytes=4 * MIB,
    )
    wait_until(lambda: campaign.samples.exists(), timeout=60, what="the first tick")
    # Stop, wait, resume: the stopped time does not count and nothing generated is lost.
    stopped = stop(campaign)
    products_at_stop = stopped.products_created
    time.sleep(3)
    assert Campaign.objects.get(pk=campaign.pk).products_created == products_at_stop
    resume(stopped)

    def ended():
        campaign.refresh_from_db()
        return campaign.state in (Campaign.State.FINISHED, Campaign.State.FAILED)

    wait_until(ended, timeout=240, interval=1, what="the campaign to end")
    assert campaign.state == Campaign.State.FINISHED, campaign.error
    summary = campaign.summary
    assert summary["products"] == campaign.products_created >= 4
    assert summary["complete"] == summary["products"] and summary["success_rate"] == 1.0
    assert summary["offered_bytes"] >= summary["planned_bytes"]  # generation reaches the target curve
    # Walk the destinations' data folders: every file of the campaign's products, checksum verified.
    expected = {
        (f.product.campaign_link.destination, f.relative_path): f
        for f in ProductFile.objects.filter(product__campaign_link__campaign=campaign).select_related(
            "product__campaign_link"
        )
    }
    found_bytes, per_destination = 0, {d: 0 for d in destinations}
    for name in destinations:
        root = bound_topology[name].local_path("srcnet/campaign")
        for path in root.rglob(f"{product_prefix(campaign)}-*/*"):
            relative = f"campaign/{path.parent.name}/{path.name}"
            spec = expected.get((name, relative))
            assert spec is not None, f"{path} at {name}: not a file the campaign sent there"
            assert adler32_of(path) == spec.adler32 and path.stat().st_size == spec.size_bytes
            found_bytes += spec.size_bytes
            per_destination[name] += spec.size_bytes
    assert found_bytes == summary["achieved_bytes"] > 0
    for name in destinations:
        assert per_destination[name] == summary["per_destination"][name]["achieved"] > 0
    samples = list(campaign.samples.all())
    assert samples[-1].achieved_bytes == found_bytes and len(samples) >= 3
    # The optional clean-up (off by default): every replica's file goes, over XRootD, then the products.
    sdp = bound_topology["SKA1-LOW_SDP"].local_path("srcnet/campaign")
    assert list(sdp.glob(f"{product_prefix(campaign)}-*/*"))
    assert clean_up(campaign.pk) == 2 * len(expected)  # at the SDP and at the one destination
    assert not ProductFile.objects.filter(product__campaign_link__campaign=campaign).exists()
    for name, site in bound_topology.items():
        assert not list(site.local_path("srcnet/campaign").glob(f"{product_prefix(campaign)}-*/*")), name
