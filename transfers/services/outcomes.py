"""What happens after a copy: claim an attempt, record its outcome, settle the job."""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from ..choices import SETTLED_FILE_STATES, TERMINAL_JOB_STATES, AttemptState, FileState, JobState, JobType
from ..executor import CopyOutcome
from ..models import TransferAttempt, TransferFile, TransferJob
from ..signals import job_finished
from .common import enqueue_dispatch


def claim_attempt(attempt_id: int, *, worker: str = "") -> TransferAttempt | None:
    """Claim a RUNNING, unclaimed attempt for execution; None if another delivery already has it.

    Raises ValueError for an id that is not an attempt's (a malformed or stale task message)."""
    if isinstance(attempt_id, bool) or not isinstance(attempt_id, int):
        raise ValueError(f"an attempt id is an integer, got {attempt_id!r}")
    if not TransferAttempt.objects.filter(pk=attempt_id).exists():
        raise ValueError(f"no transfer attempt {attempt_id}")
    claimed = TransferAttempt.objects.filter(
        pk=attempt_id, state=AttemptState.RUNNING, claimed__isnull=True
    ).update(claimed=timezone.now(), worker=worker)
    if not claimed:
        return None
    return TransferAttempt.objects.select_related("file__job").get(pk=attempt_id)


def _promote_next(row: TransferFile) -> bool:
    """Start what comes after ``row``: the next hop of a multihop job after a success, the next source
    of a multi-source job after a failure. True if something was promoted."""
    job = row.job
    if job.job_type == JobType.MULTIHOP:
        candidates = job.files.filter(state=FileState.NOT_USED, file_index__gt=row.file_index)
    else:
        candidates = job.files.filter(state=FileState.NOT_USED, file_index=row.file_index)
    following = candidates.order_by("file_index", "id").first()
    if following is None:
        return False
    following.state = FileState.SUBMITTED
    following.save(update_fields=["state"])
    return True


@transaction.atomic
def finish_attempt(attempt_id: int, outcome: CopyOutcome) -> TransferFile:
    """Record an attempt's outcome: the file finishes, fails, or waits for a (bounded, backed-off) retry.

    Multihop and multi-source jobs are never retried (as in FTS3): a failed hop ends the job, a failed
    source makes way for the next one."""
    attempt = TransferAttempt.objects.select_for_update().get(pk=attempt_id)
    row = TransferFile.objects.select_for_update().select_related("job").get(pk=attempt.file_id)
    now = timezone.now()
    attempt.state = AttemptState.SUCCEEDED if outcome.ok else AttemptState.FAILED
    attempt.finished = now
    attempt.reason = outcome.error
    attempt.copy_params = outcome.parameters
    attempt.save(update_fields=["state", "finished", "reason", "copy_params"])
    job = row.job
    retry_in: float | None = None
    if row.state == FileState.ACTIVE:
        row.duration_seconds = outcome.seconds
        row.source_checksum = outcome.source_checksum
        row.dest_checksum = outcome.dest_checksum
        if outcome.ok:
            row.state, row.reason, row.finish_time = FileState.FINISHED, "", now
            row.transferred_bytes = outcome.bytes
        elif outcome.retryable and job.job_type == JobType.NORMAL and row.attempts <= job.retry:
            retry_in = job.retry_delay * (2 ** (row.attempts - 1))
            row.state, row.reason = FileState.SUBMITTED, f"attempt {row.attempts} failed: {outcome.error}"
            row.retry_after = now + timedelta(seconds=retry_in)
        else:
            row.state, row.finish_time = FileState.FAILED, now
            row.reason = (
                outcome.error if row.attempts == 1 else f"after {row.attempts} attempts: {outcome.error}"
            )
        row.save()
        if (row.state == FileState.FINISHED and job.job_type == JobType.MULTIHOP) or (
            row.state == FileState.FAILED and job.job_type == JobType.MULTI_SOURCE
        ):
            _promote_next(row)
    settle_job(job)
    enqueue_dispatch(countdown=retry_in or 0.0)
    return row


def _job_outcome(job: TransferJob, states: list[str]) -> str:
    used = [s for s in states if s != FileState.NOT_USED]
    finished = used.count(FileState.FINISHED)
    if job.state == JobState.CANCELED or (used and used.count(FileState.CANCELED) == len(used)):
        return JobState.CANCELED
    if job.job_type == JobType.MULTI_SOURCE:
        return JobState.FINISHED if finished else JobState.FAILED
    if job.job_type == JobType.MULTIHOP:
        return JobState.FINISHED if finished == len(states) else JobState.FAILED
    if finished == len(used):
        return JobState.FINISHED
    return JobState.FAILED if finished == 0 else JobState.FINISHEDDIRTY


def settle_job(job: TransferJob) -> None:
    """Move the job to its terminal state once no file can still move, and announce it after commit."""
    job = TransferJob.objects.select_for_update().get(pk=job.pk)
    states = list(job.files.values_list("state", flat=True))
    if job.state in TERMINAL_JOB_STATES or not all(s in SETTLED_FILE_STATES for s in states):
        return
    if (
        job.job_type == JobType.MULTI_SOURCE
        and FileState.FINISHED not in states
        and FileState.NOT_USED in states
        and FileState.CANCELED not in states
    ):
        return  # an alternative source is still to be tried
    job.state = _job_outcome(job, states)
    job.finished = timezone.now()
    job.save(update_fields=["state", "finished", "updated"])
    job_id = job.pk
    transaction.on_commit(
        lambda: job_finished.send(sender=TransferJob, job=TransferJob.objects.get(pk=job_id))
    )


def reap_lost_attempts(*, older_than: timedelta) -> int:
    """Fail attempts whose worker vanished (claimed long ago, never finished), so their file can retry."""
    cutoff = timezone.now() - older_than
    lost = list(
        TransferAttempt.objects.filter(state=AttemptState.RUNNING, claimed__lt=cutoff).values_list(
            "pk", flat=True
        )
    )
    for attempt_id in lost:
        finish_attempt(attempt_id, CopyOutcome(ok=False, seconds=0.0, error="worker lost during the copy"))
    return len(lost)
