"""Consistency checks against real XRootD sites of their own (``CHECK-*``), so that what a check lists is
only what these tests wrote: an SDP and two SRCs, each enforcing the session issuer's tokens, bound to the
reference topology's SKA1-LOW_SDP, UKSRC_DISK and AUSRC_DISK. Each test starts from empty storage."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from localnet.binding import bind_endpoints
from localnet.state import StateDir
from localnet.xrootd import LocalSite, stop_site
from replicas import lifecycle
from replicas.choices import ReplicaState
from replicas.models import DataProduct
from replicas.services import FileSpec, register_product
from tests.conftest import token_site
from tests.integration.conftest import put_file, unique
from topology.models import StorageEndpoint, Telescope

SITES = {"SKA1-LOW_SDP": "CHECK-SDP", "UKSRC_DISK": "CHECK-UK", "AUSRC_DISK": "CHECK-AU"}
MIB = 1024 * 1024


@pytest.fixture(scope="module")
def check_sites(test_state: StateDir, token_issuer) -> Iterator[dict[str, LocalSite]]:  # type: ignore[no-untyped-def]
    sites = {endpoint: token_site(test_state, token_issuer, name) for endpoint, name in SITES.items()}
    yield sites
    for name in SITES.values():
        stop_site(test_state, name)


@pytest.fixture
def checked(transactional_db, reference_topology, check_sites):  # type: ignore[no-untyped-def]
    """The reference topology bound to the CHECK sites, their storage emptied (what earlier tests left)."""
    for site in check_sites.values():
        base = site.local_path("/srcnet/")
        for child in base.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
    bind_endpoints(check_sites)
    return check_sites


@dataclass
class Placed:
    """A product written at the SDP and at UKSRC, its replica there AVAILABLE as a finished copy leaves it."""

    product: DataProduct
    files: dict[str, str]  # name -> adler32

    def at(self, sites: dict[str, LocalSite], endpoint: str, name: str):  # type: ignore[no-untyped-def]
        return sites[endpoint].local_path(f"srcnet/{self.product.scope}/{self.product.name}/{name}")


def placed_product(
    sites: dict[str, LocalSite], *, files: tuple[str, ...] = ("a.ms", "b.ms"), size: int = MIB
) -> Placed:
    name = unique("check")
    specs = []
    for file_name in files:
        relative = f"ska/{name}/{file_name}"
        checksum = put_file(sites["SKA1-LOW_SDP"], relative, size)
        assert put_file(sites["UKSRC_DISK"], relative, size) == checksum  # same seed: the same bytes
        specs.append(FileSpec(file_name, size, checksum))
    product = register_product(
        scope="ska", name=name, telescope=Telescope.objects.get(name="SKA1-Low"), files=specs
    )
    lifecycle.new_replica(
        product=product,
        endpoint=StorageEndpoint.objects.get(name="UKSRC_DISK"),
        state=ReplicaState.AVAILABLE,
        reason="a push copy; transfer job j finished",
    )
    lifecycle.follow_replicas(product, product.replicas.all())
    return Placed(product, {s.name: s.adler32 for s in specs})
