"""Job options reaching the copy: real copies between the test XRootD sites by the Celery worker, checked
through the gfal2 transfer parameters each attempt records (``TransferAttempt.copy_params``, read back from
the parameters object handed to ``gfal2.filecopy``) and on the destination's disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from localnet.xrootd import stop_site
from tests.conftest import register_local_sites, token_site, wait_until
from transfers.choices import JobState
from transfers.executor import default_timeout
from transfers.models import LinkLimit, TransferAttempt, TransferJob
from transfers.services import FileRequest, cancel_job, submit_job

from .conftest import adler32_of, ended, put_file, unique

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
MIB = 1024 * 1024


def params_of(job: TransferJob) -> dict:  # type: ignore[type-arg]
    return TransferAttempt.objects.filter(file__job=job).latest("number").copy_params


@pytest.fixture
def one_file(xrootd_sites):  # type: ignore[no-untyped-def]
    """A 3 MiB + 1 byte file at the SDP and a function making a request to copy it to UKSRC."""
    source, destination = xrootd_sites["SKA1-LOW_SDP"], xrootd_sites["UKSRC_DISK"]
    name = unique("opts")
    size = 3 * MIB + 1
    checksum = put_file(source, f"ska/{name}/f.ms", size)

    def request(target: str = "f.ms", checksum_text: str | None = None) -> FileRequest:
        return FileRequest(
            source.root_url(f"srcnet/ska/{name}/f.ms"),
            destination.root_url(f"srcnet/ska/{name}/{target}"),
            filesize=size,
            checksum=f"ADLER32:{checksum}" if checksum_text is None else checksum_text,
        )

    return {
        "request": request,
        "checksum": checksum,
        "size": size,
        "path": lambda target="f.ms": destination.local_path(f"srcnet/ska/{name}/{target}"),
        "link": (f"root://127.0.0.1:{source.root_port}", f"root://127.0.0.1:{destination.root_port}"),
    }


def test_nostreams_and_buffer_size_reach_gfal2(celery_worker, one_file):
    # The job's nostreams and buffer_size (what the FTS3 endpoint stores from params.nostreams/buffer_size).
    job = submit_job(
        files=[one_file["request"]("a.ms")], internal_params={"nostreams": 4, "buffer_size": 4 * MIB}
    )
    assert ended(job).state == JobState.FINISHED
    assert params_of(job)["nbstreams"] == 4 and params_of(job)["tcp_buffersize"] == 4 * MIB
    # A job without nostreams gets its link's default; a job's own value still wins over the link's.
    source_se = one_file["link"][0]
    LinkLimit.objects.create(source_se=source_se, dest_se="*", max_active=4, nostreams=3)
    plain = submit_job(files=[one_file["request"]("b.ms")])
    own = submit_job(files=[one_file["request"]("c.ms")], internal_params={"nostreams": 2})
    assert ended(plain).state == ended(own).state == JobState.FINISHED
    assert params_of(plain)["nbstreams"] == 3 and params_of(plain)["tcp_buffersize"] == 0
    assert params_of(own)["nbstreams"] == 2
    for target in ("a.ms", "b.ms", "c.ms"):
        assert adler32_of(one_file["path"](target)) == one_file["checksum"]


def test_the_default_timeout_is_600_s_plus_2_s_per_mib(celery_worker, one_file):
    job = submit_job(files=[one_file["request"]()])
    assert ended(job).state == JobState.FINISHED
    # 3 MiB + 1 byte: 4 started MiB.
    assert params_of(job)["timeout"] == default_timeout(one_file["size"]) == 600 + 2 * 4
    explicit = submit_job(files=[one_file["request"]("t.ms")], timeout=77)
    assert ended(explicit).state == JobState.FINISHED and params_of(explicit)["timeout"] == 77


def test_target_only_checks_the_destination_against_the_given_checksum(celery_worker, one_file):
    # The source's checksum is never asked for (as for a source that has none stored): only the
    # destination is compared with the checksum the job gives.
    job = submit_job(files=[one_file["request"]("t1.ms")], verify_checksum="target", retry=0)
    assert ended(job).state == JobState.FINISHED
    row = job.files.get()
    assert row.source_checksum == "" and row.dest_checksum == one_file["checksum"]
    assert params_of(job)["checksum_mode"] == "target"
    assert params_of(job)["checksum_value"] == one_file["checksum"]
    wrong = submit_job(
        files=[one_file["request"]("t2.ms", "ADLER32:00000001")], verify_checksum="target", retry=0
    )
    assert ended(wrong).state == JobState.FAILED
    assert "checksum" in wrong.files.get().reason.lower()


def test_source_mode_checks_the_source_only(celery_worker, one_file):
    job = submit_job(files=[one_file["request"]("s1.ms")], verify_checksum="source", retry=0)
    assert ended(job).state == JobState.FINISHED
    row = job.files.get()
    assert row.source_checksum == one_file["checksum"] and row.dest_checksum == ""
    assert params_of(job)["checksum_mode"] == "source"
    wrong = submit_job(
        files=[one_file["request"]("s2.ms", "ADLER32:00000001")], verify_checksum="source", retry=0
    )
    assert ended(wrong).state == JobState.FAILED
    assert "SOURCE checksum mismatch" in wrong.files.get().reason
    assert not one_file["path"]("s2.ms").exists()  # compared before the copy, as FTS3 does


def test_none_mode_does_not_verify(celery_worker, one_file):
    # A wrong checksum is not looked at: the copy finishes, nothing was compared or read.
    job = submit_job(files=[one_file["request"]("n.ms", "ADLER32:00000001")], verify_checksum="none", retry=0)
    assert ended(job).state == JobState.FINISHED
    row = job.files.get()
    assert row.source_checksum == row.dest_checksum == ""
    assert params_of(job)["checksum_mode"] == "none" and params_of(job)["checksum_value"] == ""
    assert adler32_of(one_file["path"]("n.ms")) == one_file["checksum"]


def test_overwrite_false_fails_on_an_existing_destination_and_true_replaces_it(
    celery_worker, xrootd_sites, one_file
):
    destination = xrootd_sites["UKSRC_DISK"]
    # Something else already at the destination path.
    # Relative to the site's srcnet/ folder (the checkout's own path may hold a folder named srcnet too).
    relative = str(one_file["path"]("o.ms").relative_to(destination.local_path("srcnet")))
    other = put_file(destination, relative, 1000)
    assert other != one_file["checksum"]
    kept = submit_job(files=[one_file["request"]("o.ms")], overwrite=False, retry=0)
    assert ended(kept).state == JobState.FAILED
    reason = kept.files.get().reason
    assert "exists" in reason.lower() and params_of(kept)["overwrite"] is False
    assert adler32_of(one_file["path"]("o.ms")) == other  # untouched
    replaced = submit_job(files=[one_file["request"]("o.ms")], overwrite=True, retry=0)
    assert ended(replaced).state == JobState.FINISHED and params_of(replaced)["overwrite"] is True
    assert adler32_of(one_file["path"]("o.ms")) == one_file["checksum"]


def copy_story(job: TransferJob, partial: Path) -> str:
    """What became of a job's copies, for a failure message: states, attempts, reasons, the destination."""
    files = [
        f"file {f.file_index} {f.state} {f.reason!r}; attempts "
        + ", ".join(
            f"{a.number} {a.state} task={a.task_id or '-'} {a.reason!r}" for a in f.attempt_rows.all()
        )
        for f in job.files.order_by("file_index")
    ]
    size = partial.stat().st_size if partial.exists() else "absent"
    return f"job {job.job_id} {job.state}: " + "; ".join(files) + f"; destination {size}"


@pytest.fixture(scope="module")
def slow_source(test_state, token_issuer):  # type: ignore[no-untyped-def]
    """A source site whose readers the project's plugin paces at 1 MB/s: a copy from it lasts long enough
    to be caught half-way."""
    site = token_site(test_state, token_issuer, "SLOW-SDP", extra_lines=["wanio.net.pacing 1m"])
    yield site
    stop_site(test_state, "SLOW-SDP")


def test_a_cancelled_copy_leaves_no_partial_destination(celery_worker, xrootd_sites, slow_source):
    """A real third-party copy that has written part of its destination is cancelled: the copying process
    is killed and the partial file removed from the destination's disk."""
    register_local_sites({"SLOW-SDP": slow_source})
    destination = xrootd_sites["UKSRC_DISK"]
    name = unique("cancel")
    size = 16 * MIB
    put_file(slow_source, f"ska/{name}/f.ms", size)
    partial = destination.local_path(f"srcnet/ska/{name}/f.ms")
    job = submit_job(
        files=[
            FileRequest(
                slow_source.root_url(f"srcnet/ska/{name}/f.ms"),
                destination.root_url(f"srcnet/ska/{name}/f.ms"),
                filesize=size,
            )
        ],
        verify_checksum="none",
        retry=0,
    )

    def caught_half_way() -> bool:
        if partial.exists() and 0 < partial.stat().st_size < size:
            return True
        job.refresh_from_db()
        # A copy that ended (or never started) will not be caught half-way: say so now, with its story.
        assert job.state in (JobState.SUBMITTED, JobState.ACTIVE), copy_story(job, partial)
        return False

    try:
        wait_until(caught_half_way, timeout=60, what="a partial destination")
    except pytest.fail.Exception as timed_out:
        pytest.fail(f"{timed_out}; {copy_story(job, partial)}")
    wait_until(
        lambda: TransferAttempt.objects.filter(file__job=job).exclude(task_id="").exists(),
        timeout=30,
        what="the task id to be recorded",
    )
    cancel_job(job)
    wait_until(lambda: not partial.exists(), timeout=60, what="the partial destination to be removed")
    job.refresh_from_db()
    assert job.state == JobState.CANCELED
