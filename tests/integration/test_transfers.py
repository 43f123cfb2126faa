"""Real third-party copies between real XRootD sites, run by a real Celery worker through the task path."""

from __future__ import annotations

import pytest

from tests.conftest import wait_until
from transfers.choices import AttemptState, FileState, JobState
from transfers.models import LinkLimit, TransferAttempt, TransferFile, TransferJob
from transfers.services import FileRequest, submit_job

from .conftest import adler32_of, put_file, unique

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

MIB = 1024 * 1024


def finished_job(job: TransferJob, timeout: float = 180) -> TransferJob:
    def done():
        job.refresh_from_db()
        return job.state in (JobState.FINISHED, JobState.FAILED, JobState.FINISHEDDIRTY, JobState.CANCELED)

    wait_until(done, timeout=timeout, what=f"job {job.job_id} to end")
    return job


@pytest.mark.parametrize("scheme", ["root", "davs"])
def test_files_move_by_tpc_with_adler32_checked_at_both_ends(celery_worker, xrootd_sites, scheme):
    source, destination = xrootd_sites["SKA1-LOW_SDP"], xrootd_sites["UKSRC_DISK"]
    name = unique(f"tpc-{scheme}")
    sizes = {"a.ms": 3 * MIB + 17, "b.ms": 12 * MIB}
    sums = {f: put_file(source, f"ska/{name}/{f}", size) for f, size in sizes.items()}
    url = {"root": lambda s, p: s.root_url(f"srcnet/{p}"), "davs": lambda s, p: s.davs_url(f"srcnet/{p}")}[
        scheme
    ]
    job = submit_job(
        files=[
            FileRequest(
                source=url(source, f"ska/{name}/{f}"),
                destination=url(destination, f"ska/{name}/{f}"),
                filesize=sizes[f],
                checksum=f"ADLER32:{sums[f]}",
            )
            for f in sizes
        ]
    )
    assert finished_job(job).state == JobState.FINISHED
    for row in TransferFile.objects.filter(job=job):
        file_name = row.dest_surl.rsplit("/", 1)[1]
        on_disk = destination.local_path(f"srcnet/ska/{name}/{file_name}")
        assert on_disk.stat().st_size == sizes[file_name]
        # Checked independently of the transfer stack: the bytes on the destination's disk.
        assert adler32_of(on_disk) == sums[file_name]
        assert row.source_checksum == row.dest_checksum == sums[file_name]
        assert row.transferred_bytes == sizes[file_name] and row.attempts == 1
        assert list(row.attempt_rows.values_list("state", flat=True)) == [AttemptState.SUCCEEDED]


def test_missing_source_fails_after_the_configured_retries(celery_worker, xrootd_sites):
    source, destination = xrootd_sites["SKA1-LOW_SDP"], xrootd_sites["UKSRC_DISK"]
    name = unique("missing")
    job = submit_job(
        files=[
            FileRequest(
                source=source.root_url(f"srcnet/ska/{name}/nothing.ms"),
                destination=destination.root_url(f"srcnet/ska/{name}/nothing.ms"),
                filesize=10,
                checksum="ADLER32:0cc737eb",
            )
        ],
        retry=2,
        retry_delay=0.2,
    )
    assert finished_job(job).state == JobState.FAILED
    row = job.files.get()
    assert row.state == FileState.FAILED and row.attempts == 3
    assert "after 3 attempts" in row.reason
    assert "SOURCE [2 No such file or directory]" in row.reason, row.reason
    attempts = list(row.attempt_rows.order_by("number"))
    assert [a.number for a in attempts] == [1, 2, 3]
    assert all(a.state == AttemptState.FAILED and a.finished for a in attempts)
    # Back-off: each retry waited at least its delay (0.2 s, then 0.4 s).
    assert attempts[0].finished and attempts[1].finished
    assert (attempts[1].started - attempts[0].finished).total_seconds() >= 0.2
    assert (attempts[2].started - attempts[1].finished).total_seconds() >= 0.4
    assert not destination.local_path(f"srcnet/ska/{name}/nothing.ms").exists()


def test_a_redelivered_attempt_is_a_no_op(celery_worker, xrootd_sites):
    from transfers.tasks import execute_attempt

    source, destination = xrootd_sites["SKA1-LOW_SDP"], xrootd_sites["AUSRC_DISK"]
    name = unique("redeliver")
    checksum = put_file(source, f"ska/{name}/f.ms", MIB)
    job = submit_job(
        files=[
            FileRequest(
                source=source.root_url(f"srcnet/ska/{name}/f.ms"),
                destination=destination.root_url(f"srcnet/ska/{name}/f.ms"),
                filesize=MIB,
                checksum=f"ADLER32:{checksum}",
            )
        ]
    )
    assert finished_job(job).state == JobState.FINISHED
    attempt = TransferAttempt.objects.get(file__job=job)
    before = TransferFile.objects.filter(job=job).values().get()
    # The same message delivered again (e.g. after a broker reconnect) must not copy again.
    assert execute_attempt.apply(args=[attempt.pk]).get() == "already claimed"
    assert TransferFile.objects.filter(job=job).values().get() == before
    assert TransferAttempt.objects.filter(file__job=job).count() == 1


def test_link_concurrency_limit_holds_under_concurrent_workers(celery_worker, xrootd_sites):
    source, destination = xrootd_sites["SKA1-LOW_SDP"], xrootd_sites["AUSRC_DISK"]
    name = unique("limit")
    sums = {f"f{i}.ms": put_file(source, f"ska/{name}/f{i}.ms", 8 * MIB) for i in range(6)}
    source_se, dest_se = f"root://127.0.0.1:{source.root_port}", f"root://127.0.0.1:{destination.root_port}"
    LinkLimit.objects.create(source_se=source_se, dest_se=dest_se, max_active=2)
    job = submit_job(
        files=[
            FileRequest(
                source=source.root_url(f"srcnet/ska/{name}/{f}"),
                destination=destination.root_url(f"srcnet/ska/{name}/{f}"),
                filesize=8 * MIB,
                checksum=f"ADLER32:{s}",
            )
            for f, s in sums.items()
        ]
    )
    peak = 0

    def done():
        nonlocal peak
        # A copy is one file, or a copy session of several small files copied one after another (its
        # files are ACTIVE together): the limit counts copies.
        copies = (
            TransferFile.objects.filter(source_se=source_se, dest_se=dest_se, state=FileState.ACTIVE)
            .values("copy_session")
            .distinct()
            .count()
        )
        peak = max(peak, copies)
        job.refresh_from_db()
        return job.state == JobState.FINISHED

    wait_until(done, timeout=240, interval=0.05, what="the limited job")
    assert 1 <= peak <= 2
    # Six small files for two slots: two sessions of three, side by side (every slot used).
    sessions: dict[str, list[TransferAttempt]] = {}
    for attempt in TransferAttempt.objects.filter(file__job=job):
        sessions.setdefault(attempt.task_id, []).append(attempt)
    assert sorted(len(attempts) for attempts in sessions.values()) == [3, 3]
    # From the attempt rows: at no instant were more than two copies (sessions) on the link.
    events = []
    for attempts in sessions.values():
        claimed = [a.claimed for a in attempts if a.claimed is not None]
        finished = [a.finished for a in attempts if a.finished is not None]
        assert len(claimed) == len(finished) == len(attempts)
        events += [(min(claimed), 1), (max(finished), -1)]
    running = max_running = 0
    for _, delta in sorted(events, key=lambda e: (e[0], e[1])):
        running += delta
        max_running = max(max_running, running)
    assert max_running <= 2


@pytest.mark.parametrize("bad", ["12", None, 10**9])
def test_malformed_task_arguments_are_rejected_without_side_effects(bad):
    before = (TransferAttempt.objects.count(), TransferFile.objects.count())
    from transfers.tasks import execute_attempt

    assert execute_attempt.apply(args=[bad]).get().startswith("rejected:")
    assert (TransferAttempt.objects.count(), TransferFile.objects.count()) == before
