"""Write many rows' fields in one UPDATE (PostgreSQL), without Django's per-row CASE expressions.

Django's ``bulk_update`` builds a ``CASE WHEN pk = ... THEN ...`` expression per field and row, and resolving
those in Python costs far more than the statement itself: 290 ms of a 460 ms dispatch admitting 100 files
(bench/control_plane, 2026-11-29). Here the values travel as one JSON document of rows of text, read as a
record set and cast to each column's type by PostgreSQL: the same single statement, built in linear time.
Only plain column fields (no relations, no expressions) are written."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Sequence
from typing import Any

from django.db import connection, models


def _as_text(field: models.Field, value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(field, models.JSONField):
        return json.dumps(value, cls=field.encoder)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    return str(value)


def _record_set(
    rows: Sequence[models.Model],
    columns: Sequence[models.Field],
    value: Callable[[models.Field, models.Model], Any],
    *,
    with_pk: bool = False,
) -> tuple[str, str, list[str]]:
    """The rows as one JSON document of text values (``v0``, ``v1``... per column, ``pk`` first when asked),
    the record set that reads it (``jsonb_to_recordset(%s::jsonb) AS v(...)``) and each column's value
    from it cast to the column's type. One document, not an array per field: psycopg quotes an array's
    elements one by one in Python as the statement is built (4 % of a worker's time at the file rate,
    bench/control_plane), a string once, in C."""
    names = [f"v{i}" for i in range(len(columns))]
    document = json.dumps(
        [
            {
                **({"pk": str(row.pk)} if with_pk else {}),
                **{name: _as_text(f, value(f, row)) for name, f in zip(names, columns, strict=True)},
            }
            for row in rows
        ]
    )
    record = ", ".join(f"{name} text" for name in (["pk"] if with_pk else []) + names)
    casts = [f"v.{name}::{f.db_type(connection)}" for name, f in zip(names, columns, strict=True)]
    return document, f"jsonb_to_recordset(%s::jsonb) AS v({record})", casts


def update_rows(model: type[models.Model], rows: Sequence[models.Model], fields: Sequence[str]) -> int:
    """Write ``fields`` of ``rows`` (instances of ``model``, with primary keys) as they are in memory, in one
    statement; returns the rows updated."""
    if not rows:
        return 0
    meta = model._meta
    columns: list[models.Field] = []
    for name in fields:
        field = meta.get_field(name)
        if not isinstance(field, models.Field) or field.is_relation or not field.column:
            raise ValueError(f"{model.__name__}.{name} is not a plain column")
        columns.append(field)
    pk = meta.pk
    assert pk is not None and pk.column
    quote = connection.ops.quote_name
    document, record_set, casts = _record_set(
        rows, columns, lambda f, row: getattr(row, f.attname), with_pk=True
    )
    assignments = ", ".join(
        f"{quote(str(f.column))} = {cast}" for f, cast in zip(columns, casts, strict=True)
    )
    sql = (
        f"UPDATE {quote(meta.db_table)} AS t SET {assignments} FROM {record_set} "
        f"WHERE t.{quote(pk.column)} = v.pk::{pk.db_type(connection)}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [document])
        return int(cursor.rowcount)


def insert_rows(model: type[models.Model], rows: Sequence[models.Model]) -> None:
    """Insert ``rows`` (new instances of ``model``, its primary key made by the database) in one statement
    from one JSON document, as ``update_rows`` writes them, and give each its primary key. Django's
    ``bulk_create`` prepared every value in Python and psycopg quoted each array element (80 us a row of
    TransferFile, half of a push cycle's submission). Each field's ``pre_save`` runs as in ``bulk_create``
    (``auto_now_add`` times); no signals are sent, none are sent by ``bulk_create`` either."""
    if not rows:
        return
    meta = model._meta
    pk = meta.pk
    assert pk is not None and pk.column
    columns = [f for f in meta.concrete_fields if f is not pk]
    document, record_set, casts = _record_set(rows, columns, lambda f, row: f.pre_save(row, True))
    quote = connection.ops.quote_name
    sql = (
        f"INSERT INTO {quote(meta.db_table)} ({', '.join(quote(str(f.column)) for f in columns)}) "
        f"SELECT {', '.join(casts)} FROM {record_set} RETURNING {quote(pk.column)}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [document])
        # The rows come back in the order they were given (as Django's own bulk insert relies on).
        keys = [key for (key,) in cursor.fetchall()]
    for row, key in zip(rows, keys, strict=True):
        row.pk = key
        row._state.adding, row._state.db = False, connection.alias
