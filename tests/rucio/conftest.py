"""A real Rucio 41.5.1 server (gunicorn, PostgreSQL) with its daemons running, for the test session, and
the adapter on it; for the end-to-end tests, the platform's FTS3 service and a worker that follows Rucio.

The server's database is named after the Django test database (``SRCNET_DB_TEST_NAME``), so several
pytest runs sharing the ``test`` state do not share a Rucio catalogue. Tests use fresh scopes and names;
RSEs are the reference topology's and are re-synced (idempotently) by each test that needs them.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings

from localnet.demo_rucio import CONVEYOR_IDENTITY, register_conveyor
from localnet.issuer import LocalIssuer
from localnet.issuer_rucio import RucioClient, ensure_rucio_client
from localnet.pki import ensure_client_cert, ensure_pki
from localnet.rucio import PacketMarking, RucioServer, ensure_rucio, stop_rucio
from localnet.scitags import EXPERIMENT
from localnet.state import StateDir
from replicas.rucio import RucioAdapter, RucioConfig
from topology.models import StorageEndpoint

from ..integration.conftest import bound_topology  # noqa: F401 (the fixture, for the end-to-end tests)
from .fts3_service import Fts3Service, TransferWorker, isolated_env
from .helpers import SITES

FTS_PLACEHOLDER = "https://127.0.0.1:1"
# How often the end-to-end tests' worker follows Rucio's rules into replicas (seconds).
FOLLOW_INTERVAL = "1"
# How often Rucio's conveyor reads the platform's SciTags marks again (seconds; Rucio's default is 48 h).
MARKS_INTERVAL = 5


def rucio_instance() -> str:
    test: Any = settings.DATABASES["default"].get("TEST") or {}
    return str(test.get("NAME") or f"pytest_{os.getpid()}")


@pytest.fixture(scope="package")
def rucio_token_client(test_state: StateDir, token_issuer: LocalIssuer) -> RucioClient:
    """Rucio's client at the session's token issuer (localnet/issuer_rucio.py)."""
    return ensure_rucio_client(test_state, token_issuer)


@pytest.fixture(scope="package")
def fts3_port(test_state: StateDir, django_db_setup) -> int:  # type: ignore[no-untyped-def]
    """The port of this run's FTS3 service (``fts3_service``), known before the Rucio server starts: Rucio's
    ``[packet-marking] fetch_url`` is the service's ``/api/scitags/`` (recorded in the state per instance)."""
    return test_state.port(f"pytest-fts3:{rucio_instance()}")


@pytest.fixture(scope="package")
def rucio_server(  # type: ignore[no-untyped-def]
    test_state: StateDir, rucio_token_client: RucioClient, django_db_setup, fts3_port: int
) -> Iterator[RucioServer]:
    """A fresh catalogue for this package's tests (rules and requests of earlier runs must not reach this
    run's FTS3), and the server's daemons running while they run: the conveyor asks the session's token
    issuer for its tokens (RSEs with ``oidc_support``), as Rucio asks SKA-IAM, and keeps the certificate of
    ``rucio-conveyor`` for RSEs without. Package-wide, not session-wide: its daemons and the FTS3 service's
    worker would otherwise go on running beside every later test of the same pytest worker.

    After ``django_db_setup``: the instance is named after the test database, whose name takes its
    pytest-xdist suffix there (made first, the server was named without it, and a later ``ensure_rucio``
    of the same run started a second one).

    The conveyor marks each file it submits with the SciTags mark of its rule's activity ([packet-marking]),
    read from the platform's marks at this run's FTS3 service (``fts3_port``), as a deployment's Rucio
    reads them from the platform; again every 5 s, so a read before the service is up (a conveyor
    submission of an earlier test, to the placeholder endpoint) is soon made good."""
    usercert, _ = ensure_client_cert(test_state, CONVEYOR_IDENTITY)
    marking = PacketMarking(
        fetch_url=f"https://127.0.0.1:{fts3_port}/api/scitags/",
        exp_name=EXPERIMENT,
        fetch_interval=MARKS_INTERVAL,
        ca_file=str(ensure_pki(test_state).parent / "ca.pem"),
    )
    server = ensure_rucio(
        test_state,
        instance=rucio_instance(),
        usercert=usercert,
        fresh=True,
        token_client=rucio_token_client,
        packet_marking=marking,
    )
    yield server
    stop_rucio(test_state, instance=rucio_instance())


@pytest.fixture
def rucio_mode(rucio_server: RucioServer, monkeypatch: pytest.MonkeyPatch) -> RucioServer:
    """The platform in Rucio mode for this test: the session server's SRCNET_RUCIO_* settings in the
    environment the adapter reads (the API's and the push loop's, in this process)."""
    for key, value in rucio_server.platform_env().items():
        monkeypatch.setenv(key, value)
    return rucio_server


@pytest.fixture
def rucio(rucio_server: RucioServer, test_state: StateDir) -> RucioAdapter:
    """The adapter on the session's server. Its daemons are started again first if one died, as systemd
    would in a deployment: a test elsewhere in the session restarts the PostgreSQL they use
    (tests/faults), and a daemon caught in its heartbeat then exits."""
    ensure_rucio(test_state, instance=rucio_instance())
    return RucioAdapter(
        RucioConfig(
            url=rucio_server.url,
            account=rucio_server.account,
            username=rucio_server.username,
            password=rucio_server.password,
        )
    )


@pytest.fixture
def scope(rucio: RucioAdapter) -> Iterator[str]:
    """A fresh scope; afterwards every rule on its datasets is deleted (with its queued requests), so the
    conveyor runs of later tests only see their own transfers."""
    name = f"t{uuid.uuid4().hex[:12]}"
    yield name
    if name not in rucio.client.list_scopes():
        return
    for did in rucio.client.list_dids(name, {"name": "*"}, did_type="dataset"):
        did_name = did if isinstance(did, str) else did["name"]
        for rule in rucio.client.list_did_rules(name, did_name):
            rucio.client.delete_replication_rule(rule["id"], purge_replicas=False)


@pytest.fixture(scope="package")
def fts3_service(
    test_state, django_db_setup, token_issuer, rucio_server: RucioServer, fts3_port: int
) -> Iterator[Fts3Service]:  # type: ignore[no-untyped-def]
    """The platform's FTS3 service over HTTPS, and its worker. The worker's beat also follows this Rucio
    server's rules into replicas (``replicas.follow_rucio_rules``) every second, as a deployment's does.

    Stopped when this package's tests end: the worker's beat sweeps the whole test database for work to
    dispatch every 5 s, and, left running (it was session-wide), it took the copies of the fault bench's
    tests that ran after it on the same pytest-xdist worker, so their faults never struck (CI, 2026-11-28:
    no pool process died after its copy; a copy's pace was recorded at the default 5 s heartbeat)."""
    env = isolated_env(test_state, str(settings.DATABASES["default"]["NAME"]), f"srcnet-rucio-{os.getpid()}")
    env.update(rucio_server.platform_env())
    env["SRCNET_RUCIO_FOLLOW_INTERVAL"] = FOLLOW_INTERVAL
    worker = TransferWorker(test_state, env)
    try:
        service = Fts3Service(test_state, env, port=fts3_port)
        try:
            yield service
        finally:
            service.stop()
    finally:
        worker.stop()


@pytest.fixture
def conveyor_cert(test_state, transactional_db, rucio_token_client):  # type: ignore[no-untyped-def]
    """The conveyor's account on the FTS3 endpoint, allowed to submit: its client certificate's DN and its
    issuer tokens' subject both registered to it. Returns the certificate."""
    pem, dn = ensure_client_cert(test_state, CONVEYOR_IDENTITY)
    register_conveyor(dn, rucio_token_client)
    return pem


@pytest.fixture
def rucio_sites(bound_topology, fts3_service, rucio: RucioAdapter):  # type: ignore[no-untyped-def]  # noqa: F811
    """The local XRootD sites as RSEs whose FTS3 endpoint is this run's service."""
    eps = list(StorageEndpoint.objects.filter(name__in=SITES).select_related("site"))
    rucio.sync_endpoints(eps, fts_url=fts3_service.url)
    return bound_topology
