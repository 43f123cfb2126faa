"""The reference topology from the database, through snapshot.py, into the planner and the simulator."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from replicas.models import DataProduct, ProductFile
from schedulers.planning import Product, ReplicaPolicy, plan
from schedulers.planning.policies import share_sites
from schedulers.simulation.engine import SimConfig, simulate
from schedulers.simulation.reference import reference_topology as yaml_topology
from schedulers.simulation.scenarios import scenarios
from schedulers.simulation.workload import daily_products
from schedulers.snapshot import head_of_queue, products_with_pins, queued_products, topology_snapshot
from topology.models import Link, StorageEndpoint, Telescope

from .helpers import setup_with

pytestmark = pytest.mark.django_db


def test_snapshot_reads_the_reference_topology(reference_topology) -> None:  # type: ignore[no-untyped-def]
    topo = topology_snapshot()
    assert [t.name for t in topo.telescopes] == ["SKA1-Low", "SKA1-Mid"]
    assert {t.access_link for t in topo.telescopes} == {"low-access", "mid-access"}
    assert len(topo.sites) == 16
    assert len(share_sites(topo)) == 14
    assert topo.window_bytes == 2**30
    # The stored paths are the ones the pure loader computes from the same file.
    expected = yaml_topology()
    for tel in ("SKA1-Low", "SKA1-Mid"):
        for site in share_sites(topo):
            assert topo.path(tel, site) == expected.path(tel, site)


def test_on_a_scaled_network_the_loop_plans_on_the_scaled_figures(reference_topology, settings) -> None:  # type: ignore[no-untyped-def]
    """SRCNET_NETWORK_SCALE (the long-haul local network sets it to its CAPACITY_SCALE): capacities, site
    budgets and telescope volumes divided; RTT, loss, windows and paths as stored; so is the plan's rate."""
    full = topology_snapshot()
    settings.SRCNET_NETWORK_SCALE = 1000.0
    scaled = topology_snapshot()
    for big, small in zip(full.links, scaled.links, strict=True):
        assert small.capacity_bps == big.capacity_bps / 1000 and small.rtt_ms == big.rtt_ms
        assert small.loss_rate == big.loss_rate
    for big_site, small_site in zip(full.sites, scaled.sites, strict=True):
        assert small_site.budget_per_telescope_bps == big_site.budget_per_telescope_bps / 1000
    low = scaled.telescope("SKA1-Low")
    assert low.daily_volume_bytes == full.telescope("SKA1-Low").daily_volume_bytes / 1000
    assert scaled.paths == full.paths and scaled.window_bytes == full.window_bytes
    assert scaled.link(low.access_link).capacity_bps == 100e6  # the emulator's 100 Mbit/s, not 100 Gbit/s


def test_a_network_scale_that_is_not_a_positive_number_stops_the_process() -> None:
    """A bad SRCNET_NETWORK_SCALE is a configuration error naming the setting, before anything runs."""
    for bad in ("0", "-3", "abc", "inf"):
        result = setup_with("NETWORK_SCALE", bad)
        assert result.returncode != 0, bad
        assert f"SRCNET_NETWORK_SCALE must be a positive number, not '{bad}'" in result.stderr, result.stderr


def test_a_link_that_is_down_has_no_capacity(reference_topology) -> None:  # type: ignore[no-untyped-def]
    Link.objects.filter(name="perth-singapore").update(is_up=False)
    assert topology_snapshot().link("perth-singapore").capacity_bps == 0


def test_plan_and_simulate_a_short_horizon_on_the_stored_topology(reference_topology) -> None:  # type: ignore[no-untyped-def]
    topo = topology_snapshot()
    products = daily_products(topo, days=600 / 86400, warm_backlog_s=0)
    result = plan(products, topo, ReplicaPolicy())
    assert set(result.replicas) == {p.id for p in products}
    sim = simulate(
        topo, scenarios()["distribution"].policy, products, SimConfig(duration_s=1200, replan_s=300)
    )
    delivered = sum(1 for r in sim.records.values() if r.replicas and set(r.replicas) <= set(r.delivered_s))
    assert delivered == len(products)  # ten minutes of output are through within twenty


def test_queued_products_read_the_sdp_queue(reference_topology) -> None:  # type: ignore[no-untyped-def]
    low = Telescope.objects.get(name="SKA1-Low")
    product = DataProduct.objects.create(
        scope="ska",
        name="obs1",
        telescope=low,
        source=StorageEndpoint.objects.get(name="SKA1-LOW_SDP"),
        priority=4,
    )
    for i in range(3):
        ProductFile.objects.create(product=product, name=f"f{i}", size_bytes=10**9, adler32="00000001")
    DataProduct.objects.create(
        scope="ska", name="empty", telescope=low, source=StorageEndpoint.objects.get(name="SKA1-LOW_SDP")
    )
    now = dt.datetime.now(dt.UTC)  # after the products were created: they have arrived
    (queued,) = queued_products(now=now)
    assert queued == Product("ska:obs1", "SKA1-Low", 3e9, 0.0, 4, None, 3)


def test_a_pinned_product_is_read_with_its_pin_in_one_statement(
    reference_topology, django_assert_num_queries
) -> None:  # type: ignore[no-untyped-def]
    """A campaign commits a product with its pin: the cycle must see both or neither. Reading them in two
    statements let a product committed in between be planned without its pin (a real run sent two
    campaign products to SRCs outside the campaign)."""
    from replicas.choices import ReplicaState
    from replicas.models import Replica

    low = Telescope.objects.get(name="SKA1-Low")
    sdp = StorageEndpoint.objects.get(name="SKA1-LOW_SDP")
    pinned, free = (
        DataProduct.objects.create(scope="ska", name=name, telescope=low, source=sdp)
        for name in ("pinned", "free")
    )
    for product in (pinned, free):
        ProductFile.objects.create(product=product, name="f", size_bytes=10**9, adler32="00000001")
    Replica.objects.create(
        product=pinned, endpoint=StorageEndpoint.objects.get(name="AUSRC_DISK"), state=ReplicaState.PLANNED
    )
    now = dt.datetime.now(dt.UTC)
    ids = head_of_queue(now, 10)
    with django_assert_num_queries(1):
        queued = products_with_pins(ids, now=now)
    assert {(q.id, q.destination) for q in queued} == {("ska:pinned", "AUSRC"), ("ska:free", None)}


def test_simulate_command_writes_the_report(reference_topology, tmp_path) -> None:  # type: ignore[no-untyped-def]
    call_command("simulate", "--scenario", "one_replica", "--days", "0.01", "--out", str(tmp_path), "--no-lp")
    report = (tmp_path / "report.md").read_text()
    assert "| one_replica | SKA1-Low |" in report
    for name in ("summary.json", "utilisation.png", "sdp_buffer.png", "shares.png"):
        assert (tmp_path / name).stat().st_size > 0


def test_simulate_command_rejects_an_unknown_scenario(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(CommandError, match="scenario: unknown 'three_replicas'"):
        call_command("simulate", "--scenario", "three_replicas", "--out", str(tmp_path))


def test_each_site_says_how_its_landing_storage_pulls_third_party_copies(reference_topology) -> None:  # type: ignore[no-untyped-def]
    """davs:// (the default): HTTP-TPC's 16 MiB blocks, one stream each; root://: no block limit. The
    endpoint that counts is the one copies land on: an SRC's disk, a distribution centre's buffer."""
    from topology.choices import StorageRole
    from topology.models import Site
    from topology.tpc_streams import HTTP_TPC_BLOCK_BYTES

    StorageEndpoint.objects.filter(name="UKSRC_DISK").update(tpc_scheme="root")
    StorageEndpoint.objects.filter(name="LONDONDC_BUFFER").update(tpc_scheme="root")
    # A disk at a distribution centre is not where copies land there: its scheme does not count.
    StorageEndpoint.objects.create(
        name="LONDONDC_DISK",
        site=Site.objects.get(name="LondonDC"),
        role=StorageRole.DISK,
        hostname="d.example.org",
    )
    blocks = {site.name: site.tpc_block_bytes for site in topology_snapshot().sites}
    assert blocks["UKSRC"] == 0.0 and blocks["LondonDC"] == 0.0
    assert blocks["AUSRC"] == blocks["SingaporeDC"] == float(HTTP_TPC_BLOCK_BYTES)
    StorageEndpoint.objects.filter(name="AUSRC_DISK").update(is_active=False)  # no landing storage: no limit
    assert {site.name: site.tpc_block_bytes for site in topology_snapshot().sites}["AUSRC"] == 0.0
