"""A real Rucio 41.5.1 server (gunicorn, PostgreSQL) for the test session, and the adapter on it.

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

from localnet.rucio import RucioServer, ensure_rucio, stop_rucio
from localnet.state import StateDir
from replicas.rucio import RucioAdapter, RucioConfig

from ..integration.conftest import bound_topology  # noqa: F401 (the fixture, for the end-to-end tests)

FTS_PLACEHOLDER = "https://127.0.0.1:1"


def rucio_instance() -> str:
    test: Any = settings.DATABASES["default"].get("TEST") or {}
    return str(test.get("NAME") or f"pytest_{os.getpid()}")


@pytest.fixture(scope="session")
def rucio_server(test_state: StateDir) -> Iterator[RucioServer]:
    """A fresh catalogue per session: rules and requests of earlier runs must not reach this run's FTS3."""
    server = ensure_rucio(test_state, instance=rucio_instance(), fresh=True)
    yield server
    stop_rucio(test_state, instance=rucio_instance())


@pytest.fixture
def rucio(rucio_server: RucioServer) -> RucioAdapter:
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
