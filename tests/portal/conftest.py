"""The reference topology is imported once for the whole package (an import recomputes 242 paths, seconds
each time); every test still runs in its own rolled-back transaction on top of it. The package's teardown
empties the database again, so tests elsewhere start from the state they expect."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from tests.conftest import REFERENCE_TOPOLOGY


@pytest.fixture(scope="package")
def _package_topology(django_db_setup, django_db_blocker):  # type: ignore[no-untyped-def]
    from topology.services.importer import import_topology

    with django_db_blocker.unblock():
        summary = import_topology(text=REFERENCE_TOPOLOGY.read_text())
    yield summary
    with django_db_blocker.unblock():
        call_command("flush", interactive=False, verbosity=0)


@pytest.fixture
def reference_topology(db, _package_topology):  # type: ignore[no-untyped-def]
    return _package_topology
