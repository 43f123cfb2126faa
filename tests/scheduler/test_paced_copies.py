"""Paced copies (SRCNET_PACE_COPIES): each copy of a push job asks its source site for its share of the
lane's planned rate (``wanio.pace`` in the source URL, which the wanio plugin applies under the site's own
pacing: tests/xrootd_plugin/test_reads.py); off, the source URLs are the files' own."""

from __future__ import annotations

import pytest
from django.test import override_settings

from replicas.models import DataProduct, ReplicaPolicy
from replicas.services import FileSpec, register_product
from schedulers.leg_submission import submit_first
from schedulers.planning.types import Leg, LegRole
from topology.models import Telescope
from transfers.embedded_transfertool import EmbeddedTransfertool
from transfers.models import TransferFile

from .helpers import setup_with

pytestmark = pytest.mark.django_db


def _leg(product: DataProduct) -> Leg:
    # 60 Mbit/s planned for the lane, which keeps 3 copies in flight (this product's 2 of them).
    return Leg(
        product_id=product.did,
        role=LegRole.PRIMARY,
        source="SKA1-Low",
        destination="UKSRC",
        links=(),
        streams=2,
        files=2,
        start_s=0.0,
        start_slot=0,
        finish_s=10.0,
        rate_bps=60e6,
        priority=3,
        lane_files=3,
    )


def _submit(name: str) -> list[str]:
    low = Telescope.objects.get(name="SKA1-Low")
    files = [FileSpec("a.ms", 10**6, "0cc737eb"), FileSpec("b.ms", 2 * 10**6, "0cc737eb")]
    product = register_product(scope="ska", name=name, telescope=low, files=files)
    submitted = submit_first(_leg(product), None, None, ReplicaPolicy(), EmbeddedTransfertool())
    assert submitted is not None
    rows = TransferFile.objects.filter(job__metadata__product=product.did).order_by("file_index")
    return [row.source_surl for row in rows]


@override_settings(SRCNET_PACE_COPIES=1.0)
def test_each_copy_asks_its_source_for_its_share_of_the_lanes_rate(reference_topology) -> None:  # type: ignore[no-untyped-def]
    sources = _submit("paced")
    assert len(sources) == 2
    # 60 Mbit/s over the lane's 3 copies: 20 Mbit/s, 2.5 MB/s each.
    assert all(url.endswith("?wanio.pace=2500000") for url in sources), sources
    assert all(url.split("?")[0].endswith(".ms") for url in sources)


@override_settings(SRCNET_PACE_COPIES=1.25)
def test_a_pace_factor_scales_the_share(reference_topology) -> None:  # type: ignore[no-untyped-def]
    assert all(url.endswith("?wanio.pace=3125000") for url in _submit("paced-more"))


@override_settings(SRCNET_PACE_COPIES=0.0)
def test_unpaced_copies_read_the_files_own_urls(reference_topology) -> None:  # type: ignore[no-untyped-def]
    sources = _submit("unpaced")
    assert len(sources) == 2 and not any("?" in url for url in sources), sources


@pytest.mark.parametrize("value", ["fast", "-1", "nan"])
def test_a_bad_pace_factor_stops_the_process_naming_the_setting(value: str) -> None:
    done = setup_with("PACE_COPIES", value)
    assert done.returncode != 0
    assert f"SRCNET_PACE_COPIES must be a positive number, not {value!r}" in done.stderr
