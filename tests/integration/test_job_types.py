"""Multihop, multi-source and cancellation of a running copy, with real copies by the Celery worker."""

from __future__ import annotations

import os
import socket
import threading

import pytest

from localnet.issuer import allow_audience
from tests.conftest import register_storage, wait_until
from transfers.choices import AttemptState, FileState, JobState, JobType
from transfers.models import TransferAttempt
from transfers.services import FileRequest, cancel_job, submit_job

from .conftest import adler32_of, ended, put_file, unique

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
MIB = 1024 * 1024


def test_multihop_relays_through_a_distribution_centre_hop_by_hop(celery_worker, xrootd_sites):
    sdp, relay, final = xrootd_sites["SKA1-LOW_SDP"], xrootd_sites["UKSRC_DISK"], xrootd_sites["AUSRC_DISK"]
    name = unique("hop")
    checksum = put_file(sdp, f"ska/{name}/f.ms", 4 * MIB)
    path = f"srcnet/ska/{name}/f.ms"
    job = submit_job(
        files=[
            FileRequest(sdp.davs_url(path), relay.davs_url(path), 4 * MIB, f"ADLER32:{checksum}"),
            FileRequest(relay.davs_url(path), final.davs_url(path), 4 * MIB, f"ADLER32:{checksum}"),
        ],
        job_type=JobType.MULTIHOP,
    )
    assert ended(job).state == JobState.FINISHED
    hops = list(job.files.order_by("file_index"))
    assert [h.state for h in hops] == [FileState.FINISHED, FileState.FINISHED]
    assert hops[0].finish_time and hops[1].start_time
    assert hops[0].finish_time <= hops[1].start_time  # the second hop waited for the first
    assert adler32_of(final.local_path(path)) == checksum


def test_multihop_stops_at_a_failed_hop(celery_worker, xrootd_sites):
    sdp, relay, final = xrootd_sites["SKA1-LOW_SDP"], xrootd_sites["UKSRC_DISK"], xrootd_sites["AUSRC_DISK"]
    path = f"srcnet/ska/{unique('hopfail')}/absent.ms"
    job = submit_job(
        files=[
            FileRequest(sdp.root_url(path), relay.root_url(path)),
            FileRequest(relay.root_url(path), final.root_url(path)),
        ],
        job_type=JobType.MULTIHOP,
    )
    assert ended(job).state == JobState.FAILED
    assert list(job.files.order_by("file_index").values_list("state", "attempts")) == [
        (FileState.FAILED, 1),
        (FileState.NOT_USED, 0),
    ]


def test_multi_source_falls_back_to_the_next_source(celery_worker, xrootd_sites):
    sdp, other, destination = (
        xrootd_sites["SKA1-LOW_SDP"],
        xrootd_sites["UKSRC_DISK"],
        xrootd_sites["AUSRC_DISK"],
    )
    name = unique("multi")
    checksum = put_file(other, f"ska/{name}/f.ms", MIB)
    path = f"srcnet/ska/{name}/f.ms"
    job = submit_job(
        files=[
            FileRequest(
                sdp.root_url(path), destination.root_url(path), MIB, f"ADLER32:{checksum}", file_index=0
            ),
            FileRequest(
                other.root_url(path), destination.root_url(path), MIB, f"ADLER32:{checksum}", file_index=0
            ),
        ],
        job_type=JobType.MULTI_SOURCE,
    )
    assert ended(job).state == JobState.FINISHED
    rows = list(job.files.order_by("id"))
    assert [r.state for r in rows] == [FileState.FAILED, FileState.FINISHED]
    assert "SOURCE" in rows[0].reason
    assert adler32_of(destination.local_path(path)) == checksum


@pytest.fixture
def silent_endpoint():
    """A loopback port that accepts connections and never answers: a copy to it runs until stopped."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join(timeout=5)
    for conn in held:
        conn.close()
    server.close()


def test_cancel_stops_a_running_copy(celery_worker, xrootd_sites, silent_endpoint, token_issuer):
    sdp = xrootd_sites["SKA1-LOW_SDP"]
    # A registered storage server that hangs, with an audience the issuer grants (the copy gets its tokens,
    # then hangs on the server).
    [silent] = register_storage(f"davs://127.0.0.1:{silent_endpoint}")
    silent.token_audience = allow_audience(token_issuer, "silent.srcnet.test").removeprefix("aud:")
    silent.save(update_fields=["token_audience"])
    name = unique("cancel")
    put_file(sdp, f"ska/{name}/f.ms", MIB)
    job = submit_job(
        files=[
            FileRequest(
                sdp.davs_url(f"srcnet/ska/{name}/f.ms"),
                f"davs://127.0.0.1:{silent_endpoint}/srcnet/ska/{name}/f.ms",
            )
        ],
        timeout=600,
        retry=0,
    )
    attempt = wait_until(
        lambda: TransferAttempt.objects.filter(file__job=job, claimed__isnull=False).first(),
        timeout=60,
        what="the copy to start",
    )
    wait_until(
        lambda: TransferAttempt.objects.filter(pk=attempt.pk).exclude(task_id="").exists(),
        timeout=30,
        what="the task id to be recorded",
    )
    worker_pid = int(attempt.worker.rsplit(":", 1)[1])
    assert os.path.exists(f"/proc/{worker_pid}")
    cancel_job(job)
    job.refresh_from_db()
    assert job.state == JobState.CANCELED
    # The pool process that ran the copy is terminated (Celery replaces it).
    wait_until(
        lambda: not os.path.exists(f"/proc/{worker_pid}") or _is_zombie(worker_pid),
        timeout=30,
        what="the copying process to be stopped",
    )
    attempt.refresh_from_db()
    assert attempt.state == AttemptState.FAILED and attempt.reason == "Job canceled by the user"
    assert job.files.get().state == FileState.CANCELED


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1].startswith("Z")
    except FileNotFoundError:
        return True
