"""Job options reaching the copy: real copies between the test XRootD sites by the Celery worker, checked
through the gfal2 transfer parameters each attempt records (``TransferAttempt.copy_params``, read back from
the parameters object handed to ``gfal2.filecopy``) and on the destination's disk."""

from __future__ import annotations

import pytest

from tests.conftest import wait_until
from transfers.choices import JobState
from transfers.executor import default_timeout
from transfers.models import LinkLimit, TransferAttempt, TransferJob
from transfers.services import FileRequest, submit_job

from .conftest import adler32_of, put_file, unique

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
MIB = 1024 * 1024


def ended(job: TransferJob, timeout: float = 180) -> TransferJob:
    def done():
        job.refresh_from_db()
        return job.state in (JobState.FINISHED, JobState.FAILED, JobState.FINISHEDDIRTY, JobState.CANCELED)

    wait_until(done, timeout=timeout, what=f"job {job.job_id}")
    return job


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
