"""The Rucio policy package's rule of access (rucio/policy/ska_rucio_policy/access.py), alone: who may ask
for the product of a DID's metadata, and what the platform writes for it (replicas/rucio_access.py)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from types import SimpleNamespace

from localnet.state import PROJECT_ROOT
from replicas.rucio_access import access, dataset_access_meta

NOW = dt.datetime(2026, 11, 28, 12, 0, tzinfo=dt.UTC)
LATER = (NOW + dt.timedelta(days=30)).isoformat()
MEMBER = {access.project_attribute("BB02.survey")}


def test_the_platform_reads_the_policy_packages_own_file():
    """One definition: the module the platform imports is the policy package's file (a link in the checkout;
    the wheel carries its content)."""
    policy = PROJECT_ROOT / "rucio" / "policy" / "ska_rucio_policy" / "access.py"
    assert Path(access.__file__).resolve() == policy.resolve()


def test_a_proprietary_product_is_closed_to_outsiders_and_open_to_members():
    meta = {"project": "BB02.survey", access.PROPRIETARY_UNTIL: LATER}
    assert access.closed_to(meta, set(), NOW) == f"proprietary to project BB02.survey until {LATER}"
    assert access.closed_to(meta, {access.project_attribute("BB03")}, NOW) is not None  # another project's
    assert access.closed_to(meta, MEMBER, NOW) is None


def test_public_products_are_open_to_anyone():
    assert (
        access.closed_to({"project": "BB02.survey", access.PROPRIETARY_UNTIL: NOW.isoformat()}, set(), NOW)
        is None
    )
    assert access.closed_to({"project": "BB02.survey"}, set(), NOW) is None  # no end: public
    assert (
        access.closed_to({access.PROPRIETARY_UNTIL: LATER}, set(), NOW) is None
    )  # no project: observatory data


def test_an_unreadable_end_keeps_the_product_closed():
    assert access.closed_to({"project": "BB02.survey", access.PROPRIETARY_UNTIL: "soon"}, set(), NOW)
    assert access.closed_to({"project": "BB02.survey", access.PROPRIETARY_UNTIL: "soon"}, MEMBER, NOW) is None


def test_attribute_keys_fit_rucios_limit_and_differ_per_project():
    keys = {access.project_attribute(code) for code in ("A", "a", "A" * 40, "BB02.survey")}
    assert len(keys) == 4 and all(len(k) <= 30 and k.startswith("srcp-") for k in keys)


def test_the_platform_writes_the_end_in_utc_for_a_project_product_only():
    cet = dt.timezone(dt.timedelta(hours=1))
    product = SimpleNamespace(project=object(), proprietary_until=dt.datetime(2027, 1, 1, 1, 0, tzinfo=cet))
    assert dataset_access_meta(product) == {access.PROPRIETARY_UNTIL: "2027-01-01T00:00:00+00:00"}
    assert (
        dataset_access_meta(SimpleNamespace(project=None, proprietary_until=product.proprietary_until)) == {}
    )
    assert dataset_access_meta(SimpleNamespace(project=object(), proprietary_until=None)) == {}
