"""Defence in depth: the worker refuses to copy from or to storage the platform does not know, even when a
row in the database says otherwise (written around the service, or an endpoint retired since)."""

from __future__ import annotations

import pytest

from tests.conftest import wait_until
from transfers.choices import AttemptState, FileState, JobState
from transfers.models import TransferFile, TransferJob
from transfers.services import enqueue_dispatch_after_change
from transfers.tasks import remove_partial_destination

from .conftest import put_file, unique

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _row_around_the_service(source: str, destination: str) -> TransferFile:
    """A job written straight into the tables, as no API would accept it."""
    job = TransferJob.objects.create(retry=3, retry_delay=0.1, verify_checksum="none")
    return TransferFile.objects.create(job=job, file_index=0, source_surl=source, dest_surl=destination)


def _ended(row: TransferFile) -> TransferFile:
    def done() -> bool:
        row.refresh_from_db()
        return row.state in (FileState.FINISHED, FileState.FAILED)

    wait_until(done, timeout=120, what=f"file {row.pk} to end")
    return row


def test_a_local_file_source_is_refused_by_the_worker_and_not_retried(celery_worker, xrootd_sites, tmp_path):
    secret = tmp_path / "secret"
    secret.write_bytes(b"not for copying\n")
    destination = xrootd_sites["UKSRC_DISK"]
    name = unique("gate")
    row = _row_around_the_service(f"file://{secret}", destination.root_url(f"srcnet/{name}"))
    enqueue_dispatch_after_change()
    row = _ended(row)
    assert row.state == FileState.FAILED
    assert row.reason.startswith("REFUSED") and "the scheme 'file' is not served" in row.reason
    # Retrying cannot make an unknown storage known: one attempt, however many retries the job allows.
    assert row.attempts == 1
    assert list(row.attempt_rows.values_list("state", flat=True)) == [AttemptState.FAILED]
    assert not destination.local_path(f"srcnet/{name}").exists()
    assert TransferJob.objects.get(pk=row.job_id).state == JobState.FAILED


def test_an_unregistered_destination_is_refused_even_between_real_sites(celery_worker, xrootd_sites):
    from topology.models import StorageEndpoint

    source, destination = xrootd_sites["SKA1-LOW_SDP"], xrootd_sites["AUSRC_DISK"]
    name = unique("gate")
    put_file(source, name, 4096)
    # The destination is a real, running site, but retired from the platform.
    StorageEndpoint.objects.filter(root_port=destination.root_port).update(is_active=False)
    row = _row_around_the_service(source.root_url(f"srcnet/{name}"), destination.root_url(f"srcnet/{name}"))
    enqueue_dispatch_after_change()
    row = _ended(row)
    assert row.state == FileState.FAILED and "no registered storage endpoint serves root" in row.reason
    assert not destination.local_path(f"srcnet/{name}").exists()


def test_a_partial_destination_outside_registered_storage_is_not_deleted(db, tmp_path):
    victim = tmp_path / "keep-me"
    victim.write_text("still here")
    answer = remove_partial_destination(f"file://{victim}")
    assert answer.startswith("REFUSED") and victim.read_text() == "still here"


def test_the_worker_that_copies_runs_as_the_unprivileged_service_account(celery_worker):
    import os

    from localnet.processes import account_of

    expected = "srcnet" if os.geteuid() == 0 else account_of(os.getpid())
    assert account_of(celery_worker) == expected
    # Its pool processes (the ones running gfal2) too.
    with open(f"/proc/{celery_worker}/task/{celery_worker}/children") as fh:
        children = [int(p) for p in fh.read().split()]
    assert children and {account_of(pid) for pid in children} == {expected}
