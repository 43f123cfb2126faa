"""Every model invariant rejects a bad value (Model.clean / full_clean, the rule every write path runs)."""

import pytest
from django.core.exceptions import ValidationError

from replicas.models import DataProduct, PolicyShare, ProductFile, ReplicaPolicy
from topology.models import (
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
