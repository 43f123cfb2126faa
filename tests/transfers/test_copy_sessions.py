"""Copy sessions (transfers/copy_sessions.py, FTS3's session reuse): small files of one job and link copied
one after another by one worker process that holds one copy slot. The dispatch tests run in a rolled-back
transaction (no message is sent); the execution tests run the session task in this process, between mock
endpoints (gfal2's mock plugin: no bytes move, gfal2 checks sizes and checksums)."""

from __future__ import annotations

import datetime as dt
import itertools
import time
from collections import Counter

import pytest
from django.utils import timezone

from tests.transfers.test_mock_storage import _mock_endpoints
from transfers.choices import AttemptState, FileState, JobState, JobType
from transfers.copy_sessions import SessionRules
from transfers.executor import CopyOutcome
from transfers.models import LinkLimit, TransferAttempt, TransferFile
from transfers.services import FileRequest, dispatch, finish_attempts, submit_job

SRC, DST = "root://src.example.org:1094", "root://dst.example.org:1094"
MIB = 1024 * 1024


def small_job(n: int, *, size: int | None = MIB, stem: str = "f", **kw):  # type: ignore[no-untyped-def]
    return submit_job(
        files=[
            FileRequest(f"{SRC}//data/{stem}{i}", f"{DST}//data/{stem}{i}", filesize=size) for i in range(n)
        ],
        **kw,
    )


def copies_running() -> dict[str, list[TransferFile]]:
    copies: dict[str, list[TransferFile]] = {}
    for row in TransferFile.objects.filter(state=FileState.ACTIVE).order_by("id"):
        copies.setdefault(row.copy_session, []).append(row)
    return copies


@pytest.mark.django_db
def test_a_backlog_of_small_files_shares_sessions_that_hold_one_slot_each() -> None:
    LinkLimit.objects.create(source_se=SRC, dest_se=DST, max_active=2)
    job = small_job(10)
    assert len(dispatch()) == 10  # every file admitted: two sessions of five
    copies = copies_running()
    assert sorted(len(files) for files in copies.values()) == [5, 5]
    # Each attempt's message is its session's; the files of a session follow the job's order.
    for session, files in copies.items():
        assert {a.task_id for a in TransferAttempt.objects.filter(file__in=files)} == {session}
        assert [f.file_index for f in files] == sorted(f.file_index for f in files)
    assert dispatch() == []  # the link's two slots are taken by the two sessions
    assert job.files.filter(state=FileState.ACTIVE).count() == 10


@pytest.mark.django_db
def test_every_free_slot_is_used_before_files_share_one() -> None:
    LinkLimit.objects.create(source_se=SRC, dest_se=DST, max_active=4)
    small_job(3)
    dispatch()
    assert sorted(len(files) for files in copies_running().values()) == [1, 1, 1]
    small_job(9, stem="g")  # 9 files for the one slot left: a session of them all
    dispatch()
    assert sorted(len(files) for files in copies_running().values()) == [1, 1, 1, 9]


@pytest.mark.django_db
def test_large_unsized_and_multihop_files_never_share() -> None:
    LinkLimit.objects.create(source_se=SRC, dest_se=DST, max_active=2)
    small_job(4, size=200 * MIB, stem="big")  # above SESSION_MAX_BYTES (100 MiB)
    dispatch()
    assert sorted(len(files) for files in copies_running().values()) == [1, 1]
    TransferFile.objects.update(state=FileState.FINISHED)
    small_job(4, size=None, stem="unsized")  # a size not known in advance: not known to be small
    dispatch()
    assert sorted(len(files) for files in copies_running().values()) == [1, 1]
    TransferFile.objects.update(state=FileState.FINISHED)
    hops = submit_job(
        files=[
            FileRequest(f"{SRC}//data/hop", f"{DST}//data/hop", filesize=MIB),
            FileRequest(f"{DST}//data/hop", f"{SRC}//data/hop2", filesize=MIB),
        ],
        job_type=JobType.MULTIHOP,
    )
    # A hop waits for the one before it: never two of a job waiting at once, and never in a session.
    rules = SessionRules(files=50, max_bytes=100 * MIB)
    assert [rules.qualifies(row) for row in hops.files.select_related("job")] == [False, False]
    assert rules.qualifies(small_job(1, stem="one").files.select_related("job").get())


@pytest.mark.django_db
def test_a_session_holds_one_jobs_files() -> None:
    LinkLimit.objects.create(source_se=SRC, dest_se=DST, max_active=2)
    first, second = small_job(6, stem="a"), small_job(6, stem="b")
    dispatch()
    for files in copies_running().values():
        assert len({f.job_id for f in files}) == 1
    assert {f.job_id for files in copies_running().values() for f in files} <= {first.pk, second.pk}


@pytest.mark.django_db
def test_session_files_1_turns_sessions_off(settings) -> None:  # type: ignore[no-untyped-def]
    settings.SRCNET_TRANSFERS = {**settings.SRCNET_TRANSFERS, "SESSION_FILES": 1}
    LinkLimit.objects.create(source_se=SRC, dest_se=DST, max_active=2)
    small_job(10)
    assert len(dispatch()) == 2
    assert sorted(len(files) for files in copies_running().values()) == [1, 1]


def _outcome(ok: bool, error: str = "") -> CopyOutcome:
    return CopyOutcome(ok=ok, seconds=0.01, bytes=MIB if ok else 0, error=error, source_checksum="0a")


@pytest.mark.django_db
def test_outcomes_recorded_together_settle_each_file_as_one_would() -> None:
    LinkLimit.objects.create(source_se=SRC, dest_se=DST, max_active=1)
    job = small_job(4, retry=1)
    ids = sorted(dispatch())
    cancelled = TransferAttempt.objects.get(pk=ids[3])
    cancelled.state = AttemptState.FAILED
    cancelled.save()
    rows = finish_attempts(
        [
            (ids[0], _outcome(True)),
            (ids[1], _outcome(False, "TRANSFER [5] broken pipe")),  # retried: one retry left
            (ids[2], CopyOutcome(ok=False, seconds=0, error="REFUSED", retryable=False, dest_touched=False)),
            (ids[3], _outcome(True)),  # its attempt had ended (cancelled): this late word changes nothing
        ]
    )
    assert [r.pk for r in rows] == [TransferAttempt.objects.get(pk=i).file_id for i in ids]
    states = {row.file_index: row for row in job.files.all()}
    assert states[0].state == FileState.FINISHED and states[0].transferred_bytes == MIB
    assert states[1].state == FileState.SUBMITTED and states[1].retry_after is not None
    assert "broken pipe" in states[1].reason
    assert states[2].state == FileState.FAILED and states[2].reason == "REFUSED"
    assert states[3].state == FileState.ACTIVE  # untouched
    attempts = {a.pk: a for a in TransferAttempt.objects.filter(pk__in=ids)}
    assert [attempts[i].state for i in ids[:3]] == [
        AttemptState.SUCCEEDED,
        AttemptState.FAILED,
        AttemptState.FAILED,
    ]
    job.refresh_from_db()
    assert job.state == JobState.ACTIVE  # two files can still move


def _mock_session(n: int, settings) -> list[int]:  # type: ignore[no-untyped-def]
    """A job of ``n`` files between mock endpoints, dispatched as one session; its attempt ids."""
    settings.SRCNET_MOCK_STORAGE, settings.SRCNET_MOCK_FAILURE_FRACTION = True, 0.0
    # No beat while the session runs: the heartbeat's thread has a connection of its own, which cannot see
    # this test's uncommitted rows.
    settings.SRCNET_TRANSFERS = {**settings.SRCNET_TRANSFERS, "HEARTBEAT_SECONDS": 300}
    # No token issuer, as on the benchmark's workers: the test stack's issuer (when this process has one)
    # knows no mock endpoint's audience and refuses their tokens.
    settings.SRCNET_TOKENS = {**settings.SRCNET_TOKENS, "ISSUER": ""}
    source, destination = _mock_endpoints()
    LinkLimit.objects.create(source_se="*", dest_se="*", max_active=1)
    submit_job(
        files=[
            FileRequest(
                source.tpc_url(f"obs/part{i}.ms"),
                destination.tpc_url(f"obs/part{i}.ms"),
                filesize=150 * 10**6,
                checksum="ADLER32:0cc737eb",
            )
            for i in range(n)
        ]
    )
    ids = sorted(dispatch())
    assert len({a.task_id for a in TransferAttempt.objects.filter(pk__in=ids)}) == 1
    return ids


@pytest.mark.django_db
def test_a_session_copies_its_files_and_a_second_delivery_does_nothing(settings) -> None:  # type: ignore[no-untyped-def]
    from transfers.tasks import execute_session

    ids = _mock_session(5, settings)
    assert execute_session.run(ids) == "5 ok"
    files = TransferFile.objects.filter(attempt_rows__pk__in=ids)
    assert Counter(files.values_list("state", flat=True)) == {FileState.FINISHED: 5}
    assert set(files.values_list("dest_checksum", flat=True)) == {"0cc737eb"}
    assert files.first().job.state == JobState.FINISHED  # type: ignore[union-attr]
    # The records say when each copy ran, one after another (not when the session was admitted).
    attempts = list(TransferAttempt.objects.filter(pk__in=ids).order_by("pk"))
    for before, after in itertools.pairwise(attempts):
        assert before.started <= before.finished <= after.started  # type: ignore[operator]
    for attempt in attempts:
        row = attempt.file
        assert (row.start_time, row.finish_time) == (attempt.started, attempt.finished)
    assert execute_session.run(ids) == "already claimed"


@pytest.mark.django_db
def test_a_file_cancelled_before_its_turn_is_not_copied(settings) -> None:  # type: ignore[no-untyped-def]
    from transfers.tasks import execute_session

    ids = _mock_session(3, settings)
    TransferAttempt.objects.filter(pk=ids[1]).update(state=AttemptState.FAILED, finished=timezone.now())
    assert execute_session.run(ids) == "2 ok"  # a claim takes only what is still to run
    assert TransferAttempt.objects.get(pk=ids[1]).claimed is None


@pytest.mark.django_db
@pytest.mark.parametrize("bad", [[], "12", [1, "2"], [True], list(range(10_001))])
def test_malformed_session_messages_are_rejected_without_side_effects(bad) -> None:  # type: ignore[no-untyped-def]
    from transfers.tasks import execute_session

    before = TransferAttempt.objects.count()
    assert execute_session.run(bad).startswith("rejected:")
    assert TransferAttempt.objects.count() == before


@pytest.mark.django_db(transaction=True)
def test_a_lost_sessions_attempts_are_sent_again_together(idle_queue) -> None:  # type: ignore[no-untyped-def]
    from transfers.services.common import dispatch_begins, enqueue_attempts

    try:
        LinkLimit.objects.create(source_se=SRC, dest_se=DST, max_active=1)
        small_job(4)
        ids = dispatch()  # committed: its message goes to the idle queue, as a session
        assert idle_queue.waiting("transfers.execute_session") == 1
        before = TransferAttempt.objects.get(pk=ids[0]).task_id
        enqueue_attempts(ids)  # the reaper's re-send, as if that message had been lost
        assert idle_queue.waiting("transfers.execute_session") == 2
        attempts = TransferAttempt.objects.filter(pk__in=ids)
        (task_id,) = set(attempts.values_list("task_id", flat=True))
        assert task_id != before
        assert set(
            TransferFile.objects.filter(attempt_rows__pk__in=ids).values_list("copy_session", flat=True)
        ) == {task_id}
    finally:
        dispatch_begins()


def test_a_reused_context_clears_an_earlier_copys_scitag_headers() -> None:
    from transfers.flow_marks import http_header_group, mark_http_copy
    from transfers.gfal_context import new_context

    ctx = new_context()
    url = "davs://storage.uksrc.example.org:8443/srcnet/a"
    assert mark_http_copy(ctx, url, 65 << 6 | 2, reused=True) != []
    assert ctx.get_opt_string_list(http_header_group(url), "HEADERS")
    assert mark_http_copy(ctx, url, None, reused=True) == []
    assert ctx.get_opt_string_list(http_header_group(url), "HEADERS") == []


@pytest.mark.django_db
def test_update_rows_writes_every_kind_of_column_in_one_statement(django_assert_num_queries) -> None:  # type: ignore[no-untyped-def]
    from srcnet.bulk_rows import update_rows

    job = small_job(2)
    rows = list(job.files.order_by("id"))
    when = dt.datetime(2026, 11, 29, 23, 0, 0, 123456, tzinfo=dt.UTC)
    rows[0].reason, rows[0].finish_time, rows[0].dest_dirty = "it's 'quoted' — ünïcode", when, True
    rows[0].metadata, rows[0].progress_bps, rows[0].attempts = {"a": [1, None]}, 1.5, 3
    rows[1].reason, rows[1].finish_time, rows[1].metadata = "", None, {}
    fields = ["reason", "finish_time", "dest_dirty", "metadata", "progress_bps", "attempts"]
    with django_assert_num_queries(1):
        assert update_rows(TransferFile, rows, fields) == 2
    first, second = job.files.order_by("id")
    assert (first.reason, first.finish_time, first.dest_dirty) == ("it's 'quoted' — ünïcode", when, True)
    assert (first.metadata, first.progress_bps, first.attempts) == ({"a": [1, None]}, 1.5, 3)
    assert (second.reason, second.finish_time, second.metadata) == ("", None, {})
    with pytest.raises(ValueError, match="job is not a plain column"):
        update_rows(TransferFile, rows, ["job"])


@pytest.mark.django_db
def test_insert_rows_stores_each_row_as_it_is_in_memory_and_gives_it_its_key(
    django_assert_num_queries,
) -> None:  # type: ignore[no-untyped-def]
    from srcnet.bulk_rows import insert_rows

    job = small_job(1)
    first = job.files.get()
    rows = [
        TransferFile(
            job=job,
            file_index=i,
            source_surl=f"{SRC}//data/n{i}",
            dest_surl=f"{DST}//data/n{i}",
            source_se=SRC,
            dest_se=DST,
            filesize=size,
            metadata=meta,
            reason=reason,
        )
        for i, (size, meta, reason) in enumerate(
            [(None, {"a": [1, None], "b": "ü"}, "it's 'quoted'"), (2**40, {}, ""), (0, {"x": True}, "x\ny")]
        )
    ]
    attempts = [TransferAttempt(file=first, number=n, task_id="m") for n in (1, 2)]
    with django_assert_num_queries(2):
        insert_rows(TransferFile, rows)
        insert_rows(TransferAttempt, attempts)
    assert all(row.pk and not row._state.adding for row in rows + attempts)
    assert [row.pk for row in rows] == sorted(row.pk for row in rows)  # keys given in the rows' order
    for row in rows:
        stored = TransferFile.objects.get(pk=row.pk)
        assert (stored.file_index, stored.filesize, stored.metadata, stored.reason, stored.job_id) == (
            row.file_index,
            row.filesize,
            row.metadata,
            row.reason,
            job.pk,
        )
        assert stored.state == FileState.SUBMITTED and stored.dest_dirty is False  # the fields' defaults
    # auto_now_add is set as bulk_create sets it.
    assert all(a.started is not None for a in attempts)
    assert list(
        TransferAttempt.objects.filter(pk__in=[a.pk for a in attempts])
        .order_by("pk")
        .values_list("number", "started")
    ) == [(a.number, a.started) for a in attempts]


@pytest.mark.django_db(transaction=True)
def test_the_session_heartbeat_renews_what_runs_and_learns_what_was_cancelled(idle_queue) -> None:  # type: ignore[no-untyped-def]
    from transfers.heartbeats import SessionHeartbeat
    from transfers.services.common import dispatch_begins

    try:
        LinkLimit.objects.create(source_se=SRC, dest_se=DST, max_active=1)
        small_job(3)
        ids = sorted(dispatch())  # committed; the session's message waits in the idle queue
        TransferAttempt.objects.filter(pk=ids[2]).update(state=AttemptState.FAILED)  # cancelled
        with SessionHeartbeat(ids, interval=0.2) as heartbeat:
            heartbeat.finished(ids[0])  # copied already: no more beats for it
            deadline = time.monotonic() + 10
            while ids[2] not in heartbeat.ended and time.monotonic() < deadline:
                time.sleep(0.1)
        assert heartbeat.ended == {ids[2]}
        beats = dict(TransferAttempt.objects.filter(pk__in=ids).values_list("pk", "heartbeat"))
        assert beats[ids[1]] is not None and beats[ids[0]] is None and beats[ids[2]] is None
    finally:
        dispatch_begins()
