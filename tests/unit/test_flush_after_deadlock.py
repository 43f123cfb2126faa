"""The test database's flush, between transactional tests, survives a deadlock with a process that still
reads the tables (tests/conftest.py ``_flush_survives_a_deadlock``), as CI saw at stop 20."""

from __future__ import annotations

import re
import threading
import time

import psycopg
import pytest
from django.contrib.auth.models import User
from django.core.management.color import no_style
from django.core.management.sql import sql_flush
from django.db import connection

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_flush_that_meets_a_deadlock_runs_again_and_empties_the_tables():
    User.objects.create_user("left-behind")
    statements = sql_flush(no_style(), connection, reset_sequences=False, allow_cascade=False)
    tables = re.findall(r'"(\w+)"', statements[0])
    first, last = tables[0], tables[-1]

    # Another process (the session's Celery worker, in CI) holds a read lock on the TRUNCATE's last table
    # and, while the TRUNCATE waits for it, reads the first, which the TRUNCATE has locked already.
    reader = psycopg.connect(**connection.get_connection_params())
    reader.execute(f'SELECT 1 FROM "{last}" LIMIT 1')  # opens the reader's transaction
    read_first: list[float] = []

    def read_the_first_table() -> None:
        time.sleep(0.5)  # the TRUNCATE is waiting for the last table by now
        reader.execute(f'SELECT 1 FROM "{first}" LIMIT 1')
        read_first.append(time.monotonic())
        reader.commit()

    thread = threading.Thread(target=read_the_first_table)
    thread.start()
    try:
        # PostgreSQL aborts the TRUNCATE, which waited first; the fixture runs it again.
        connection.ops.execute_sql_flush(statements)
    finally:
        thread.join(timeout=30)
        reader.close()
    assert read_first, "the reader never got its lock"
    assert not User.objects.exists()
