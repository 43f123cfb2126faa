"""srcnet transfers list/watch and jobs show/cancel against the live server; rows made in the database."""

from __future__ import annotations

import json
import threading
import time

from cli.exit_codes import ExitCode
from transfers.choices import FileState
from transfers.models import TransferFile, TransferJob

SRC = "root://sdp.ska-low.example.org:1094//products/obs/"
DST = "root://storage.uksrc.example.org:1094//products/obs/"
GiB = 2**30


def make_job(*states: str, size: int = GiB) -> TransferJob:
    job = TransferJob.objects.create(activity="test")
    for index, state in enumerate(states):
        finished = state == FileState.FINISHED
        TransferFile.objects.create(
            job=job,
            file_index=index,
            source_surl=f"{SRC}f{index}",
            dest_surl=f"{DST}f{index}",
            filesize=size,
            checksum="ADLER32:0a1b2c3d",
            state=state,
            transferred_bytes=size if finished else 0,
            duration_seconds=8.0 if finished else None,
            reason="checksum mismatch" if state == FileState.FAILED else "",
        )
    return job


def test_transfers_list_filters_by_state_and_job(srcnet, transactional_db):
    done = make_job(FileState.FINISHED, FileState.FINISHED)
    mixed = make_job(FileState.FAILED, FileState.ACTIVE)
    result = srcnet("transfers", "list", "-o", "json")
    assert result.code == ExitCode.OK, result.err
    assert len(json.loads(result.out)) == 4
    failed = json.loads(srcnet("transfers", "list", "--state", "FAILED", "-o", "json").out)
    assert [(f["job_id"], f["state"], f["reason"]) for f in failed] == [
        (str(mixed.job_id), "FAILED", "checksum mismatch")
    ]
    both = json.loads(srcnet("transfers", "list", "--state", "FAILED", "--state", "ACTIVE", "-o", "json").out)
    assert len(both) == 2
    of_job = json.loads(srcnet("transfers", "list", "--job", str(done.job_id), "-o", "json").out)
    assert {f["job_id"] for f in of_job} == {str(done.job_id)}
    assert len(of_job) == 2
    table = srcnet("transfers", "list", "--job", str(done.job_id)).out
    assert "1.0 GiB" in table
    assert "1.1 Gbit/s" in table  # 1 GiB in 8 s


def test_watch_all_finished_exits_0(srcnet, transactional_db):
    job = make_job(FileState.FINISHED, FileState.FINISHED)
    result = srcnet("transfers", "watch", "--job", str(job.job_id), "--interval", "0.1")
    assert result.code == ExitCode.OK == 0, result.err
    assert "srcnet: FINISHED 2 | 2.0 GiB / 2.0 GiB (100%)" in result.err
    assert "srcnet: all 2 file(s) finished" in result.err
    rows = result.out.splitlines()[2:]
    assert len(rows) == 2
    assert all("FINISHED" in row for row in rows)


def test_watch_with_a_failed_file_exits_7(srcnet, transactional_db):
    job = make_job(FileState.FINISHED, FileState.FAILED)
    result = srcnet("transfers", "watch", "--job", str(job.job_id), "-o", "json")
    assert result.code == ExitCode.TRANSFER_FAILED == 7
    assert sorted(f["state"] for f in json.loads(result.out)) == ["FAILED", "FINISHED"]
    assert "srcnet: 1 of 2 file(s) failed or were canceled" in result.err


def test_watch_with_a_canceled_file_exits_7(srcnet, transactional_db):
    job = make_job(FileState.CANCELED)
    assert srcnet("transfers", "watch", "--job", str(job.job_id)).code == ExitCode.TRANSFER_FAILED


def test_watch_times_out_with_exit_8(srcnet, transactional_db):
    job = make_job(FileState.FINISHED, FileState.ACTIVE)
    started = time.monotonic()
    result = srcnet(
        "transfers", "watch", "--job", str(job.job_id), "--timeout", "1", "--interval", "0.2", "-o", "json"
    )
    elapsed = time.monotonic() - started
    assert result.code == ExitCode.TIMEOUT == 8
    assert 1.0 <= elapsed < 10
    assert "srcnet: timed out after 1 s: 1 of 2 file(s) not finished" in result.err
    assert sorted(f["state"] for f in json.loads(result.out)) == ["ACTIVE", "FINISHED"]


def test_watch_follows_progress_until_the_end_on_a_tty(srcnet, transactional_db, tty_stderr):
    job = make_job(FileState.ACTIVE, FileState.SUBMITTED)
    files = list(job.files.order_by("file_index"))
    stderr = tty_stderr

    def shown(text: str) -> bool:
        # The job moves on only once the watch has drawn the state before it, so that every state is drawn
        # however slowly the machine runs the watch's polls (a fixed sleep raced them on a loaded machine).
        deadline = time.monotonic() + 20
        while text not in stderr.getvalue():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def finish(row: TransferFile) -> None:
        TransferFile.objects.filter(pk=row.pk).update(state=FileState.FINISHED, transferred_bytes=GiB)

    def finish_later() -> None:
        if shown("SUBMITTED 1  ACTIVE 1 |"):
            finish(files[0])
        if shown("SUBMITTED 1  FINISHED 1 |"):
            finish(files[1])

    worker = threading.Thread(target=finish_later)
    worker.start()
    try:
        result = srcnet(
            "transfers",
            "watch",
            "--job",
            str(job.job_id),
            "--interval",
            "0.2",
            "--timeout",
            "30",
            stderr=stderr,
        )
    finally:
        worker.join()
    assert result.code == ExitCode.OK, result.err
    assert "\rSUBMITTED 1  ACTIVE 1 | 0 B / 2.0 GiB (0%)" in result.err
    assert "\rSUBMITTED 1  FINISHED 1 | 1.0 GiB / 2.0 GiB (50%)" in result.err
    assert "\rFINISHED 2 | 2.0 GiB / 2.0 GiB (100%)" in result.err
    assert "MB/s" in result.err
    assert "\x1b[K" in result.err


def test_watch_unknown_job_exits_4(srcnet, transactional_db):
    result = srcnet("transfers", "watch", "--job", "00000000-0000-0000-0000-000000000000")
    assert result.code == ExitCode.NOT_FOUND
    assert "/api/transfers/jobs/00000000-0000-0000-0000-000000000000/" in result.err


def test_watch_without_job_follows_the_active_jobs(srcnet, transactional_db):
    old = make_job(FileState.FAILED)  # an old job, already ended: not watched
    TransferJob.objects.filter(pk=old.pk).update(state="FAILED")
    active = make_job(FileState.FINISHED)
    TransferJob.objects.filter(pk=active.pk).update(state="ACTIVE")
    result = srcnet("transfers", "watch", "--interval", "0.1", "-o", "json")
    assert result.code == ExitCode.OK, result.err
    assert "srcnet: watching 1 job(s)" in result.err
    assert [f["job_id"] for f in json.loads(result.out)] == [str(active.job_id)]


def test_jobs_show_and_cancel(srcnet, scientist_token, transactional_db):
    job = make_job(FileState.FINISHED, FileState.SUBMITTED)
    shown = srcnet("jobs", "show", str(job.job_id))
    assert shown.code == ExitCode.OK, shown.err
    assert shown.out.splitlines()[0].split() == ["job_id", str(job.job_id)]
    assert "files            2" in shown.out

    denied = srcnet("jobs", "cancel", str(job.job_id), token=scientist_token)
    assert denied.code == ExitCode.AUTH
    assert TransferFile.objects.filter(job=job, state=FileState.SUBMITTED).count() == 1

    canceled = srcnet("jobs", "cancel", str(job.job_id), "-o", "json")
    assert canceled.code == ExitCode.OK, canceled.err
    data = json.loads(canceled.out)
    assert data["state"] == "FINISHEDDIRTY"
    assert sorted(f["state"] for f in data["files"]) == ["CANCELED", "FINISHED"]
    assert sorted(job.files.values_list("state", flat=True)) == ["CANCELED", "FINISHED"]


def test_jobs_show_unknown_exits_4(srcnet, transactional_db):
    result = srcnet("jobs", "show", "00000000-0000-0000-0000-000000000000")
    assert result.code == ExitCode.NOT_FOUND
    assert srcnet("jobs", "cancel", "00000000-0000-0000-0000-000000000000").code == ExitCode.NOT_FOUND
