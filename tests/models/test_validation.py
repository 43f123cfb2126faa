"""Every model invariant rejects a bad value (Model.clean / full_clean, the rule every write path runs)."""

import pytest
from django.core.exceptions import ValidationError

from replicas.models import DataProduct, PolicyShare, ProductFile, ReplicaPolicy
from topology.models import (
    Dtn,
    Link,
    NetworkPath,
    PointOfPresence,
    RegionalCentre,
    StorageEndpoint,
    Telescope,
    Vrf,
)
from transfers.models import LinkLimit, TransferFile, TransferJob

pytestmark = pytest.mark.django_db


def site(model=PointOfPresence, **kw):
    values = {
        "name": "Perth",
        "region": "oceania",
        "country": "AU",
        "latitude": -31.9,
        "longitude": 115.8,
        **kw,
    }
    obj = model(**values)
    obj.full_clean()
    obj.save()
    return obj


def assert_invalid(obj, field):
    with pytest.raises(ValidationError) as info:
        obj.full_clean()
    assert field in info.value.message_dict, info.value.message_dict


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("latitude", 91),
        ("longitude", -181),
        ("country", "aus"),
        ("name", "1bad"),
        ("name", "has space"),
        ("region", "mars"),
    ],
)
def test_site_fields(field, value):
    obj = PointOfPresence(name="Perth", region="oceania", country="AU", latitude=0, longitude=0)
    setattr(obj, field, value)
    assert_invalid(obj, field)


def test_site_names_are_unique():
    site()
    assert_invalid(
        PointOfPresence(name="Perth", region="oceania", country="AU", latitude=0, longitude=0), "name"
    )


def test_site_kind_follows_its_model():
    assert site(Telescope, name="SKA1-Low").kind == "telescope"
    assert site(RegionalCentre, name="UKSRC", region="europe", country="GB").kind == "src"
    assert site(RegionalCentre, name="LondonDC", is_distribution_centre=True).kind == "distribution_centre"


def test_src_budget_cannot_exceed_peak():
    obj = RegionalCentre(
        name="UKSRC",
        region="europe",
        country="GB",
        latitude=0,
        longitude=0,
        budget_per_telescope_bps=80 * 10**9,
        peak_bps=70 * 10**9,
    )
    assert_invalid(obj, "budget_per_telescope_bps")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("capacity_bps", 0),
        ("capacity_bps", -5),
        ("rtt_ms", 0),
        ("rtt_ms", -1),
        ("loss_rate", -0.1),
        ("loss_rate", 0.9),
    ],
)
def test_link_numbers(field, value):
    a, b = site(name="A"), site(name="B")
    link = Link(name="a-b", a_end=a, b_end=b, capacity_bps=10**9, rtt_ms=10)
    setattr(link, field, value)
    assert_invalid(link, field)


def test_link_joins_two_different_sites():
    a = site(name="A")
    assert_invalid(Link(name="loop", a_end=a, b_end=a, capacity_bps=1, rtt_ms=1), "b_end")


def test_path_goes_somewhere_else():
    a = site(name="A")
    assert_invalid(NetworkPath(name="p", source=a, destination=a), "destination")


def test_vrf_parent_must_be_broader_and_acyclic():
    top = Vrf.objects.create(name="global", scope="global")
    national = Vrf(name="uk", scope="national", parent=top)
    national.full_clean()
    national.save()
    top.parent = national
    assert_invalid(top, "parent")
    assert_invalid(Vrf(name="x", scope="national", route_distinguisher="nope"), "route_distinguisher")


def test_storage_endpoint_rules():
    telescope = site(Telescope, name="SKA1-Low")
    src = site(RegionalCentre, name="UKSRC")
    pop = site(name="London")
    ok = StorageEndpoint(name="UKSRC_DISK", site=src, role="disk", hostname="h")
    ok.full_clean()
    assert_invalid(StorageEndpoint(name="lower", site=src, hostname="h"), "name")
    assert_invalid(StorageEndpoint(name="X", site=pop, hostname="h"), "site")
    assert_invalid(StorageEndpoint(name="X", site=telescope, role="disk", hostname="h"), "role")
    assert_invalid(StorageEndpoint(name="X", site=src, role="sdp", hostname="h"), "role")
    assert_invalid(StorageEndpoint(name="X", site=src, hostname="h", prefix="data"), "prefix")
    assert_invalid(
        StorageEndpoint(name="X", site=src, hostname="h", root_port=443, http_port=443), "http_port"
    )
    assert_invalid(StorageEndpoint(name="X", site=src, hostname="h", root_port=70000), "root_port")


@pytest.fixture
def sdp():
    telescope = site(Telescope, name="SKA1-Low")
    return telescope, StorageEndpoint.objects.create(
        name="SKA1-LOW_SDP", site=telescope, role="sdp", hostname="h"
    )


def test_product_rules(sdp):
    telescope, endpoint = sdp
    other = site(Telescope, name="SKA1-Mid")
    assert_invalid(DataProduct(scope="bad scope", name="p", telescope=telescope, source=endpoint), "scope")
    assert_invalid(
        DataProduct(scope="ska", name="p", telescope=telescope, source=endpoint, priority=9), "priority"
    )
    assert_invalid(DataProduct(scope="ska", name="p", telescope=other, source=endpoint), "source")


def test_file_rules(sdp):
    telescope, endpoint = sdp
    product = DataProduct.objects.create(scope="ska", name="p", telescope=telescope, source=endpoint)
    assert_invalid(ProductFile(product=product, name="f", size_bytes=-1, adler32="0000abcd"), "size_bytes")
    assert_invalid(ProductFile(product=product, name="f", size_bytes=1, adler32="XYZ"), "adler32")


def test_policy_share_cannot_target_sdp_storage(sdp):
    telescope, endpoint = sdp
    policy = ReplicaPolicy.objects.create(name="p", telescope=telescope)
    assert_invalid(PolicyShare(policy=policy, destination=endpoint, weight=1), "destination")
    assert_invalid(PolicyShare(policy=policy, destination=endpoint, weight=-1), "weight")


def test_transfer_rules():
    job = TransferJob.objects.create()
    assert_invalid(
        TransferFile(job=job, file_index=0, source_surl="gsiftp://a/x", dest_surl="root://b:1//x"),
        "source_surl",
    )
    assert_invalid(
        TransferFile(job=job, file_index=0, source_surl="root://a:1//x", dest_surl="root://a:1//x"),
        "dest_surl",
    )
    assert_invalid(
        TransferFile(
            job=job, file_index=0, source_surl="root://a:1//x", dest_surl="root://b:1//x", checksum="MD5:abc"
        ),
        "checksum",
    )
    assert_invalid(TransferJob(priority=6), "priority")
    assert_invalid(LinkLimit(max_active=0), "max_active")


@pytest.mark.parametrize(
    ("field", "bad", "lowest_good"),
    [("nic_speed_bps", 0, 1), ("nic_speed_bps", -1, 1), ("tcp_window_bytes", 65535, 65536)],
)
def test_dtn_numbers(field, bad, lowest_good):
    dtn = Dtn(name="dtn1.perth", site=site(), hostname="h", **{field: lowest_good})
    dtn.full_clean()
    setattr(dtn, field, bad)
    assert_invalid(dtn, field)


@pytest.mark.parametrize(
    ("field", "bad", "lowest_good"),
    [("daily_volume_bytes", -1, 0), ("sdp_buffer_bytes", 0, 1), ("sdp_buffer_bytes", -1, 1)],
)
def test_telescope_volumes(field, bad, lowest_good):
    telescope = Telescope(name="SKA1-Low", region="oceania", country="AU", latitude=0, longitude=0)
    setattr(telescope, field, lowest_good)
    telescope.full_clean()
    setattr(telescope, field, bad)
    assert_invalid(telescope, field)


@pytest.mark.parametrize(
    ("field", "value"),
    [("share_weight", -0.5), ("peak_bps", -1), ("budget_per_telescope_bps", -1)],
)
def test_src_numbers_cannot_be_negative(field, value):
    src = RegionalCentre(name="UKSRC", region="europe", country="GB", latitude=0, longitude=0)
    src.full_clean()
    setattr(src, field, value)
    assert_invalid(src, field)


@pytest.mark.parametrize(("field", "value"), [("capex_eur", -1.0), ("opex_eur_per_year", -0.01)])
def test_link_costs_cannot_be_negative(field, value):
    a, b = site(name="A"), site(name="B")
    link = Link(name="a-b", a_end=a, b_end=b, capacity_bps=10**9, rtt_ms=10, **{field: 0.0})
    link.full_clean()
    setattr(link, field, value)
    assert_invalid(link, field)


def test_link_names_are_unique():
    a, b, c = site(name="A"), site(name="B"), site(name="C")
    Link.objects.create(name="a-b", a_end=a, b_end=b, capacity_bps=10**9, rtt_ms=10)
    assert_invalid(Link(name="a-b", a_end=b, b_end=c, capacity_bps=10**9, rtt_ms=10), "name")


def test_storage_capacity_cannot_be_negative():
    src = site(RegionalCentre, name="UKSRC")
    endpoint = StorageEndpoint(name="UKSRC_DISK", site=src, hostname="h", capacity_bytes=0)
    endpoint.full_clean()
    endpoint.capacity_bytes = -1
    assert_invalid(endpoint, "capacity_bytes")


def test_job_retries_are_bounded():
    TransferJob(retry=10).full_clean()
    assert_invalid(TransferJob(retry=11), "retry")


def test_link_limit_minimum_cannot_exceed_maximum():
    LinkLimit(source_se="a", dest_se="b", min_active=3, max_active=3).full_clean()
    assert_invalid(LinkLimit(source_se="a", dest_se="b", min_active=4, max_active=3), "min_active")
