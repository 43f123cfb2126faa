"""Writes of the transfer service: submit, dispatch under per-link limits, record attempts, cancel."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Count
from django.utils import timezone

from .choices import TERMINAL_FILE_STATES, TERMINAL_JOB_STATES, AttemptState, FileState, JobState
from .executor import CopyOutcome
from .models import LinkLimit, TransferAttempt, TransferFile, TransferJob
from .signals import job_finished

# Serialises dispatchers so two workers never both admit the last free slot of a link.
DISPATCH_LOCK_KEY = 0x5C_4E_7D_15
DISPATCH_BATCH = 500


@dataclass(frozen=True)
class FileRequest:
    """One file of a submission."""

    source: str
    destination: str
    filesize: int | None = None
    checksum: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)


def _transfer_settings() -> dict[str, Any]:
    return settings.SRCNET_TRANSFERS


@transaction.atomic
def submit_job(
    *,
    files: Sequence[FileRequest],
    priority: int = 3,
    activity: str = "default",
    verify_checksum: str = "both",
    overwrite: bool = False,
    retry: int | None = None,
    retry_delay: float | None = None,
    timeout: int | None = None,
    metadata: dict[str, Any] | None = None,
    submitter: Any = None,
) -> TransferJob:
    """Validate and store a job with its files (all or nothing), then have it dispatched after commit."""
    if not files:
        raise ValidationError({"files": "A job needs at least one file."})
    config = _transfer_settings()
    job = TransferJob(
        priority=priority,
        activity=activity,
        verify_checksum=verify_checksum,
        overwrite=overwrite,
        retry=config["DEFAULT_RETRIES"] if retry is None else retry,
        retry_delay=config["RETRY_BACKOFF_SECONDS"] if retry_delay is None else retry_delay,
        timeout=timeout,
        metadata=metadata or {},
        submitter=submitter,
    )
    job.full_clean()
    job.save()
    rows = []
    for index, request in enumerate(files):
        row = TransferFile(
            job=job,
            file_index=index,
            source_surl=request.source,
            dest_surl=request.destination,
            filesize=request.filesize,
            checksum=request.checksum,
            metadata=request.metadata,
        )
        try:
            row.full_clean(exclude=["job"])
        except ValidationError as exc:
            raise ValidationError({f"files[{index}].{k}": v for k, v in exc.message_dict.items()}) from exc
        row.save()
        rows.append(row)
    transaction.on_commit(_enqueue_dispatch)
    return job


def _enqueue_dispatch(countdown: float = 0.0) -> None:
    from .tasks import dispatch

    dispatch.apply_async(countdown=countdown)


def link_limit(source_se: str, dest_se: str, limits: Sequence[LinkLimit]) -> int:
    """The most specific limit that matches the link: exact pair, then either side, then '*'->'*'."""
    for src, dst in ((source_se, dest_se), (source_se, "*"), ("*", dest_se), ("*", "*")):
        for limit in limits:
            if limit.source_se == src and limit.dest_se == dst:
                return limit.max_active
    return int(_transfer_settings()["DEFAULT_MAX_ACTIVE_PER_LINK"])


@transaction.atomic
def dispatch() -> list[int]:
    """Admit waiting files, highest priority first, as long as their link has a free slot.

    Returns the ids of the attempts created; their execution is enqueued when this commits."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [DISPATCH_LOCK_KEY])
    now = timezone.now()
    limits = list(LinkLimit.objects.all())
    active = {
        (row["source_se"], row["dest_se"]): row["n"]
        for row in TransferFile.objects.filter(state=FileState.ACTIVE)
        .values("source_se", "dest_se")
        .annotate(n=Count("id"))
    }
    waiting = (
        TransferFile.objects.select_for_update(skip_locked=True, of=("self",))
        .filter(state=FileState.SUBMITTED, job__state__in=(JobState.SUBMITTED, JobState.ACTIVE))
        .exclude(retry_after__gt=now)
        .select_related("job")
        .order_by("-job__priority", "job__created", "job_id", "file_index")[:DISPATCH_BATCH]
    )
    created: list[int] = []
    for row in waiting:
        key = (row.source_se, row.dest_se)
        if active.get(key, 0) >= link_limit(row.source_se, row.dest_se, limits):
            continue
        active[key] = active.get(key, 0) + 1
        row.state = FileState.ACTIVE
        row.attempts += 1
        row.start_time = now
        row.retry_after = None
        row.save(update_fields=["state", "attempts", "start_time", "retry_after"])
        attempt = TransferAttempt.objects.create(file=row, number=row.attempts)
        created.append(attempt.pk)
        if row.job.state == JobState.SUBMITTED:
            TransferJob.objects.filter(pk=row.job_id, state=JobState.SUBMITTED).update(state=JobState.ACTIVE)
    if created:
        transaction.on_commit(lambda: _enqueue_attempts(created))
    return created


def _enqueue_attempts(attempt_ids: Sequence[int]) -> None:
    from .tasks import execute_attempt

    for attempt_id in attempt_ids:
        execute_attempt.delay(attempt_id)


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


@transaction.atomic
def finish_attempt(attempt_id: int, outcome: CopyOutcome) -> TransferFile:
    """Record an attempt's outcome: the file finishes, fails, or waits for a (bounded, backed-off) retry."""
    attempt = TransferAttempt.objects.select_for_update().get(pk=attempt_id)
    row = TransferFile.objects.select_for_update().select_related("job").get(pk=attempt.file_id)
    now = timezone.now()
    attempt.state = AttemptState.SUCCEEDED if outcome.ok else AttemptState.FAILED
    attempt.finished = now
    attempt.reason = outcome.error
    attempt.save(update_fields=["state", "finished", "reason"])
    job = row.job
    retry_in: float | None = None
    if row.state == FileState.ACTIVE:
        row.duration_seconds = outcome.seconds
        row.source_checksum = outcome.source_checksum
        row.dest_checksum = outcome.dest_checksum
        if outcome.ok:
            row.state, row.reason, row.finish_time = FileState.FINISHED, "", now
            row.transferred_bytes = outcome.bytes
        elif row.attempts <= job.retry:
            retry_in = job.retry_delay * (2 ** (row.attempts - 1))
            row.state, row.reason = FileState.SUBMITTED, f"attempt {row.attempts} failed: {outcome.error}"
            row.retry_after = now + timedelta(seconds=retry_in)
        else:
            row.state, row.finish_time = FileState.FAILED, now
            row.reason = (
                outcome.error if row.attempts == 1 else f"after {row.attempts} attempts: {outcome.error}"
            )
        row.save()
    _settle_job(job)
    transaction.on_commit(lambda: _enqueue_dispatch(countdown=retry_in or 0.0))
    return row


def _settle_job(job: TransferJob) -> None:
    """Move the job to its terminal state once every file is terminal, and announce it after commit."""
    states = list(job.files.values_list("state", flat=True))
    if job.state in TERMINAL_JOB_STATES or not all(s in TERMINAL_FILE_STATES for s in states):
        return
    finished = states.count(FileState.FINISHED)
    if states.count(FileState.CANCELED) == len(states) or job.state == JobState.CANCELED:
        job.state = JobState.CANCELED
    elif finished == len(states):
        job.state = JobState.FINISHED
    elif finished == 0:
        job.state = JobState.FAILED
    else:
        job.state = JobState.FINISHEDDIRTY
    job.finished = timezone.now()
    job.save(update_fields=["state", "finished", "updated"])
    job_id = job.pk
    transaction.on_commit(
        lambda: job_finished.send(sender=TransferJob, job=TransferJob.objects.get(pk=job_id))
    )


@transaction.atomic
def cancel_job(job: TransferJob, *, reason: str = "canceled by the user") -> TransferJob:
    """Cancel every file not yet finished; a copy already running is left to end and its result discarded."""
    job = TransferJob.objects.select_for_update().get(pk=job.pk)
    if job.state in TERMINAL_JOB_STATES:
        return job
    job.files.exclude(state__in=TERMINAL_FILE_STATES).update(
        state=FileState.CANCELED, reason=reason, finish_time=timezone.now()
    )
    job.reason = reason
    job.save(update_fields=["reason", "updated"])
    _settle_job(job)
    return job


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
