"""The reference topology for tests, imported once per test process and restored from a snapshot after that.

About 500 tests start from the reference topology. Importing it is about 1 100 queries (every entry
upserted and validated as an operator's file is: topology/services/importer.py), 1.2-2 s a test, which made
it the largest set-up cost of the suite. The first import in a process runs the real importer; its rows (the
topology app's tables, nothing else changes: every other table was checked) are then copied out with
PostgreSQL's COPY, and every later test gets them back with one COPY a table, in one transaction, so that the
deferred foreign keys are checked once all rows are in. The restore is used only into empty topology tables;
anything else falls back to the real importer.
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass
from pathlib import Path

from django.apps import apps
from django.core.management.color import no_style
from django.db import connection, transaction


@dataclass
class _Snapshot:
    digest: str
    summary: object
    tables: dict[str, bytes]


_snapshot: _Snapshot | None = None


def _topology_tables() -> list[str]:
    config = apps.get_app_config("topology")
    return [model._meta.db_table for model in config.get_models(include_auto_created=True)]


def _empty(tables: list[str]) -> bool:
    with connection.cursor() as cursor:
        for table in tables:
            cursor.execute(f'SELECT EXISTS (SELECT 1 FROM "{table}")')
            if cursor.fetchone()[0]:
                return False
    return True


def _copy_out(tables: list[str]) -> dict[str, bytes]:
    out = {}
    with connection.cursor() as cursor:
        raw = cursor.cursor  # psycopg's own cursor: Django's wrapper has no COPY
        for table in tables:
            with raw.copy(f'COPY "{table}" TO STDOUT') as stream:
                out[table] = b"".join(bytes(chunk) for chunk in stream)
    return out


def _copy_in(tables: dict[str, bytes]) -> None:
    models = apps.get_app_config("topology").get_models(include_auto_created=True)
    with transaction.atomic(), connection.cursor() as cursor:
        raw = cursor.cursor
        for table, data in tables.items():
            with raw.copy(f'COPY "{table}" FROM STDIN') as stream:
                stream.write(data)
        # The rows keep the ids they were first given: move each id sequence past them, as a flush may have
        # reset it (a transactional test's).
        for statement in connection.ops.sequence_reset_sql(no_style(), list(models)):
            cursor.execute(statement)


def reference_topology(path: Path) -> object:
    """The reference topology in this test's database; the importer's summary of it."""
    from topology.services.importer import import_topology

    global _snapshot
    text = path.read_text()
    digest = hashlib.sha256(text.encode()).hexdigest()
    tables = _topology_tables()
    if not _empty(tables):
        return import_topology(text=text)
    if _snapshot is not None and _snapshot.digest == digest:
        _copy_in(_snapshot.tables)
        return copy.deepcopy(_snapshot.summary)
    summary = import_topology(text=text)
    _snapshot = _Snapshot(digest, copy.deepcopy(summary), _copy_out(tables))
    return summary
