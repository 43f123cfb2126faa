"""update_rows (srcnet/bulk_rows.py) writes what each row holds in memory, whatever the column's type, in one
statement, and nothing of the rows it was not given."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from srcnet.bulk_rows import update_rows
from transfers.models import TransferAttempt, TransferFile
from transfers.services import FileRequest, dispatch, submit_job

SRC, DST = "root://src.example.org:1094", "root://dst.example.org:1094"


@pytest.mark.django_db
def test_every_kind_of_value_is_written_as_it_is_in_memory_in_one_statement() -> None:
    submit_job(files=[FileRequest(f"{SRC}//data/f{i}", f"{DST}//data/f{i}", filesize=10) for i in range(3)])
    dispatch()
    attempts = list(TransferAttempt.objects.order_by("pk"))
    when = dt.datetime(2026, 11, 30, 23, 59, 59, 123456, tzinfo=dt.UTC)
    values = [
        (
            "FAILED",
            when,
            'it\'s a "quoted" reason; with ünïcode and a\nnew line',
            {"a": [1, None, "x"], "b": True},
        ),
        ("SUCCEEDED", None, "", {}),
    ]
    for attempt, (state, finished, reason, params) in zip(attempts, values, strict=False):
        attempt.state, attempt.finished, attempt.reason, attempt.copy_params = state, finished, reason, params
    with CaptureQueriesContext(connection) as queries:
        assert update_rows(TransferAttempt, attempts[:2], ["state", "finished", "reason", "copy_params"]) == 2
    assert len(queries.captured_queries) == 1
    for attempt, (state, finished, reason, params) in zip(attempts, values, strict=False):
        attempt.refresh_from_db()
        assert (attempt.state, attempt.finished, attempt.reason, attempt.copy_params) == (
            state,
            finished,
            reason,
            params,
        )
    untouched = attempts[2]
    untouched.refresh_from_db()
    assert untouched.state == "RUNNING" and untouched.reason == ""
    # Numbers, booleans and nulls of another model's columns.
    rows = list(TransferFile.objects.order_by("pk"))
    rows[0].transferred_bytes, rows[0].progress_bps, rows[0].dest_dirty = 2**40, 1.5e9, True
    rows[1].transferred_bytes, rows[1].progress_bps, rows[1].dest_dirty = 0, None, False
    update_rows(TransferFile, rows[:2], ["transferred_bytes", "progress_bps", "dest_dirty"])
    assert list(
        TransferFile.objects.order_by("pk").values_list("transferred_bytes", "progress_bps", "dest_dirty")[:2]
    ) == [(2**40, 1.5e9, True), (0, None, False)]


def test_a_relation_is_refused() -> None:
    with pytest.raises(ValueError, match="not a plain column"):
        update_rows(TransferFile, [TransferFile(pk=1)], ["job"])
