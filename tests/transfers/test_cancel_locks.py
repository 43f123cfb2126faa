"""A cancel and a dispatch meeting on the same job never deadlock: each takes its locks in the order every
writer of the transfer service takes them (a copy's attempt, then its file, then its job). In a whole run a
cancel once locked the job first and then its files while the dispatcher held a file and waited for the job:
PostgreSQL broke the circle and the cancel answered 500 (CI, tests/fts3/test_real_client.py)."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, transaction

from transfers.choices import FileState, JobState
from transfers.models import TransferFile, TransferJob
from transfers.services import FileRequest, submit_job
from transfers.services.cancel import cancel_job

pytestmark = pytest.mark.django_db(transaction=True)
SRC, DST = "root://src.example.org:1094", "root://dst.example.org:1094"


def test_a_cancel_waits_for_a_dispatch_holding_the_jobs_file_and_both_succeed():
    job = submit_job(files=[FileRequest(f"{SRC}//data/f", f"{DST}//data/f")], priority=3)
    file_locked, cancel_started = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def dispatcher() -> None:
        """As transfers.services.dispatch does: the waiting file locked first, the job's state after."""
        try:
            with transaction.atomic():
                waiting = TransferFile.objects.select_for_update(skip_locked=True, of=("self",))
                list(waiting.filter(job_id=job.pk))
                file_locked.set()
                cancel_started.wait(10)
                time.sleep(1.5)  # the cancel is blocked by now (PostgreSQL's deadlock_timeout is 1 s)
                TransferJob.objects.filter(pk=job.pk, state=JobState.SUBMITTED).update(state=JobState.ACTIVE)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    def canceller() -> None:
        try:
            file_locked.wait(10)
            cancel_started.set()
            cancel_job(TransferJob.objects.get(pk=job.pk))
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=dispatcher), threading.Thread(target=canceller)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == []
    job.refresh_from_db()
    assert job.state == JobState.CANCELED
    assert list(job.files.values_list("state", flat=True)) == [FileState.CANCELED]
