"""Operator actions on a job: cancel it (stopping copies that run), change its priority."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from ..choices import TERMINAL_JOB_STATES, AttemptState, FileState
from ..models import LinkPause, TransferAttempt, TransferFile, TransferJob
from .common import send_task
from .outcomes import settle_job

CANCEL_REASON = "Job canceled by the user"


@transaction.atomic
def cancel_job(job: TransferJob, *, reason: str = CANCEL_REASON) -> TransferJob:
    """Cancel every file not finished. A copy that runs is stopped: its worker process is terminated
    after commit and the partial destination removed."""
    # Locks in the order every writer of the service takes them: a copy's attempt, then its file, then its
    # job (finish_attempt; the dispatcher locks waiting files, then marks their jobs ACTIVE). Job first, as
    # this once did, met a dispatch holding the job's file and waiting for the job: a deadlock, and a 500.
    running = list(
        TransferAttempt.objects.select_for_update(of=("self",))
        .filter(file__job_id=job.pk, state=AttemptState.RUNNING)
        .select_related("file")
        .order_by("id")
    )
    list(
        TransferFile.objects.select_for_update(of=("self",)).filter(job_id=job.pk).order_by("id").values("id")
    )
    job = TransferJob.objects.select_for_update().get(pk=job.pk)
    if job.state in TERMINAL_JOB_STATES:
        return job
    now = timezone.now()
    job.files.filter(state__in=(FileState.SUBMITTED, FileState.ACTIVE, FileState.NOT_USED)).update(
        state=FileState.CANCELED, reason=reason, finish_time=now
    )
    for attempt in running:
        attempt.state, attempt.finished, attempt.reason = AttemptState.FAILED, now, reason
        attempt.save(update_fields=["state", "finished", "reason"])
    job.reason = reason
    job.save(update_fields=["reason", "updated"])
    settle_job(job)
    stops = [(a.task_id, a.file.dest_surl) for a in running]
    if stops:
        transaction.on_commit(lambda: _stop_copies(stops))
    return TransferJob.objects.get(pk=job.pk)


def _stop_copies(stops: list[tuple[str, str]]) -> None:
    from srcnet.task_queue import app

    for task_id, destination in stops:
        if task_id:
            # SIGKILL, as FTS3 ends a url-copy process: the pool process ignores SIGTERM while gfal2 runs a
            # copy. Celery replaces the process.
            app.control.revoke(task_id, terminate=True, signal="SIGKILL")
        send_task("transfers.remove_partial_destination", destination, countdown=2)


@transaction.atomic
def update_priority(job: TransferJob, priority: int) -> TransferJob:
    """Change the priority of a job that is not over (FTS3's POST /jobs/{id})."""
    if isinstance(priority, bool) or not isinstance(priority, int) or not 1 <= priority <= 5:
        raise ValidationError({"priority": "Priority is an integer from 1 to 5."})
    job = TransferJob.objects.select_for_update().get(pk=job.pk)
    if job.state not in TERMINAL_JOB_STATES:
        job.priority = priority
        job.save(update_fields=["priority", "updated"])
    return job


@transaction.atomic
def pause_link(*, source_se: str, dest_se: str, reason: str = "", user=None) -> LinkPause:  # type: ignore[no-untyped-def]
    """Stop admitting copies on a link (those running finish); idempotent."""
    pause, _ = LinkPause.objects.get_or_create(
        source_se=source_se, dest_se=dest_se, defaults={"reason": reason, "created_by": user}
    )
    return pause


@transaction.atomic
def resume_link(*, source_se: str, dest_se: str) -> bool:
    """Let the link admit copies again; True if it was paused. Waiting files are dispatched after commit."""
    from .common import enqueue_dispatch

    deleted, _ = LinkPause.objects.filter(source_se=source_se, dest_se=dest_se).delete()
    if deleted:
        enqueue_dispatch()
    return bool(deleted)
