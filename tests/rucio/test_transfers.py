"""End to end: Rucio rules carried out by Rucio's real conveyor through the platform's FTS3 service.

Real pieces only: the Rucio server (gunicorn, PostgreSQL), its submitter, poller and finisher run
in-process in the Rucio venv (``rucio/conveyor.py``), the platform's FTS3 REST service over HTTPS with
the conveyor's client certificate, its Celery worker copying between real XRootD servers.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from django.conf import settings
from django.contrib.auth.models import User

from localnet.pki import ensure_client_cert
from localnet.rucio import run_conveyor
from replicas.choices import ProductState, ReplicaState
from replicas.models import Replica
from replicas.rucio import RucioAdapter
from replicas.services import FileSpec, register_product
from srcnet.roles import grant_submit_transfers
from topology.models import StorageEndpoint, Telescope
from transfers.models import ClientIdentity

from ..integration.conftest import adler32_of, put_file, unique
from .fts3_service import Fts3Service, TransferWorker, isolated_env
from .helpers import SITES

pytestmark = pytest.mark.integration


@pytest.fixture(scope="session")
def fts3_service(test_state, django_db_setup) -> Iterator[Fts3Service]:  # type: ignore[no-untyped-def]
    env = isolated_env(test_state, str(settings.DATABASES["default"]["NAME"]), f"srcnet-rucio-{os.getpid()}")
    worker = TransferWorker(test_state, env)
    try:
        service = Fts3Service(test_state, env)
        try:
            yield service
        finally:
            service.stop()
    finally:
        worker.stop()


@pytest.fixture
def conveyor_cert(test_state, transactional_db):  # type: ignore[no-untyped-def]
    """The conveyor's client certificate, its DN mapped to a platform user."""
    pem, dn = ensure_client_cert(test_state, "rucio-conveyor")
    user = User.objects.create_user("rucio-conveyor")
    grant_submit_transfers(user)
    ClientIdentity.objects.create(dn=dn, user=user)
    return pem


@pytest.fixture
def rucio_sites(bound_topology, fts3_service, rucio: RucioAdapter):  # type: ignore[no-untyped-def]
    eps = list(StorageEndpoint.objects.filter(name__in=SITES).select_related("site"))
    rucio.sync_endpoints(eps, fts_url=fts3_service.url)
    return bound_topology


def _product(sites, scope: str, files: dict[str, int], *, missing: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    name = unique("obs")
    specs = []
    for fname, size in files.items():
        relative = f"{scope}/{name}/{fname}"
        if fname in missing:
            specs.append(FileSpec(fname, size, "0badc0de"))
        else:
            specs.append(FileSpec(fname, size, put_file(sites["SKA1-LOW_SDP"], relative, size)))
    return register_product(
        scope=scope, name=name, telescope=Telescope.objects.get(name="SKA1-Low"), files=specs, priority=3
    )


def test_rule_with_two_copies_goes_replicating_to_ok(rucio_sites, rucio, rucio_server, conveyor_cert, scope):  # type: ignore[no-untyped-def]
    product = _product(rucio_sites, scope, {"a.ms": 256 * 1024, "b.ms": 64 * 1024})
    rucio.register_product(product)
    dests = list(StorageEndpoint.objects.filter(name__in=["UKSRC_DISK", "AUSRC_DISK"]))
    rule = rucio.place_product(product, dests, activity="SKA Data Products")
    assert rule.state == "REPLICATING" and rule.copies == 2
    summary = run_conveyor(rucio_server, until_rules=[rule.rule_id], timeout=150, usercert=conveyor_cert)
    assert summary["rules"] == {rule.rule_id: "OK"}, summary
    rucio.sync_product(product)
    product.refresh_from_db()
    assert product.state == ProductState.PLACED
    for dest in ("UKSRC_DISK", "AUSRC_DISK"):
        replica = Replica.objects.get(product=product, endpoint__name=dest)
        assert replica.state == ReplicaState.AVAILABLE, replica.reason
        assert rule.rule_id in replica.reason
        for f in product.files.all():
            copy = rucio_sites[dest].local_path(f"srcnet/{f.relative_path}")
            assert copy.stat().st_size == f.size_bytes
            assert adler32_of(copy) == f.adler32
    states = rucio.product_replicas(product)
    assert all(set(s.values()) == {"AVAILABLE"} and len(s) == 3 for s in states.values()), states


def test_missing_source_file_fails_the_request_with_its_reason(  # type: ignore[no-untyped-def]
    rucio_sites, rucio, rucio_server, conveyor_cert, scope
):
    product = _product(rucio_sites, scope, {"gone.ms": 4096}, missing=("gone.ms",))
    rucio.register_product(product)
    dest = StorageEndpoint.objects.get(name="UKSRC_DISK")
    rule = rucio.place_product(product, [dest])
    summary = run_conveyor(rucio_server, until_rules=[rule.rule_id], timeout=200, usercert=conveyor_cert)
    assert summary["rules"] == {rule.rule_id: "STUCK"}, summary
    errors = rucio.transfer_errors(rule.rule_id)
    assert "SOURCE" in errors["UKSRC_DISK"], errors
    rucio.sync_product(product)
    replica = Replica.objects.get(product=product, endpoint=dest)
    assert replica.state == ReplicaState.FAILED
    assert rule.rule_id in replica.reason and "STUCK" in replica.reason
    # the FTS3 service's reason travels through Rucio's request into the replica's reason
    assert "TRANSFER_FAILED" in replica.reason and "No such file" in replica.reason, replica.reason
    product.refresh_from_db()
    assert product.state == ProductState.FAILED
    assert not rucio_sites["UKSRC_DISK"].local_path(f"srcnet/{scope}/{product.name}/gone.ms").exists()
    states = rucio.product_replicas(product)
    assert all("UKSRC_DISK" not in s or s["UKSRC_DISK"] != "AVAILABLE" for s in states.values()), states
