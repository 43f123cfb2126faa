"""What happens after a copy: claim an attempt, record its outcome, settle the job."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from srcnet.bulk_rows import update_rows

from ..choices import SETTLED_FILE_STATES, TERMINAL_JOB_STATES, AttemptState, FileState, JobState, JobType
from ..executor import CopyOutcome
from ..models import TransferAttempt, TransferFile, TransferJob
from ..signals import job_finished
from .common import attach_jobs, enqueue_attempts, enqueue_dispatch, remove_destination_after_commit


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


# A session message names at most this many attempts (the dispatcher makes them far smaller).
SESSION_LIMIT = 10_000


def claim_session(attempt_ids: list[int], *, worker: str = "") -> list[TransferAttempt]:
    """Claim a copy session's attempts in one statement: those still RUNNING and unclaimed (a cancelled or
    already claimed one is left out), with their files and jobs, in the session's order.

    Raises ValueError for a message that is not a list of attempt ids."""
    if (
        not isinstance(attempt_ids, list)
        or not 0 < len(attempt_ids) <= SESSION_LIMIT
        or any(isinstance(i, bool) or not isinstance(i, int) for i in attempt_ids)
    ):
        raise ValueError(f"a copy session is a list of 1 to {SESSION_LIMIT} attempt ids, got {attempt_ids!r}")
    now = timezone.now()
    TransferAttempt.objects.filter(
        pk__in=attempt_ids, state=AttemptState.RUNNING, claimed__isnull=True
    ).update(claimed=now, worker=worker)
    claimed = {
        a.pk: a
        for a in TransferAttempt.objects.select_related("file")
        .defer(*UNREAD_BY_COPIES)
        .filter(pk__in=attempt_ids, claimed=now, worker=worker)
    }
    attach_jobs([a.file for a in claimed.values()])
    return [claimed[i] for i in attempt_ids if i in claimed]


# What a copy and the record of its outcome never read (JSON, decoded for every row loaded): a session's
# rows are loaded without them. Read anyway, such a field is fetched then (one query), never wrong.
UNREAD_BY_COPIES = ("copy_params", "file__metadata")


def beat_session(attempt_ids: list[int]) -> set[int]:
    """Renew the heartbeats of a session's attempts still to finish; returns those still RUNNING (one that
    was cancelled meanwhile is not copied)."""
    TransferAttempt.objects.filter(pk__in=attempt_ids, state=AttemptState.RUNNING).update(
        heartbeat=timezone.now()
    )
    return set(
        TransferAttempt.objects.filter(pk__in=attempt_ids, state=AttemptState.RUNNING).values_list(
            "pk", flat=True
        )
    )


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
    return finish_attempts([(attempt_id, outcome)])[0]


@transaction.atomic
def finish_attempts(
    outcomes: list[tuple[int, CopyOutcome]],
    *,
    spans: dict[int, tuple[datetime, datetime]] | None = None,
    jobs: dict[int, TransferJob] | None = None,
) -> list[TransferFile]:
    """Record the outcomes of several attempts (a copy session's) as ``finish_attempt`` does each, in a few
    statements for all of them: their rows locked and written together, each job settled once, one dispatch
    asked for. Returns their files, in order.

    ``spans``: when each attempt's copy began and ended, for copies that did not begin at their admission
    (a session's, one after another): the attempt's ``started`` and its file's ``start_time`` become its
    copy's beginning, its ``finished`` and the file's ``finish_time`` its end, so the records say how many
    copies ran at once on a link, not how many files waited in sessions. ``jobs``: the files' jobs as the
    caller loaded them (a session's claim), by id; the others are read."""
    ids = [attempt_id for attempt_id, _ in outcomes]
    attempts = {
        a.pk: a
        for a in TransferAttempt.objects.select_for_update()
        .defer("copy_params")
        .filter(pk__in=ids)
        .order_by("pk")
    }
    files = {
        row.pk: row
        for row in TransferFile.objects.select_for_update()
        .defer("metadata")
        .filter(pk__in=[a.file_id for a in attempts.values()])
        .order_by("pk")
    }
    attach_jobs(list(files.values()), known=jobs)
    now = timezone.now()
    ended: list[TransferAttempt] = []
    changed: list[TransferFile] = []
    results: list[TransferFile] = []
    retries: list[float] = []
    for attempt_id, outcome in outcomes:
        attempt = attempts[attempt_id]
        row = files[attempt.file_id]
        results.append(row)
        if attempt.state != AttemptState.RUNNING:
            # Already ended: reaped while its worker was out of reach, or cancelled. The file has moved on
            # (another attempt may be running); this late word changes nothing.
            continue
        began, end = (spans or {}).get(attempt_id, (attempt.started, now))
        attempt.state = AttemptState.SUCCEEDED if outcome.ok else AttemptState.FAILED
        attempt.started, attempt.finished = began, end
        attempt.reason, attempt.copy_params = outcome.error, outcome.parameters
        ended.append(attempt)
        if row.state != FileState.ACTIVE:
            continue
        if spans and attempt_id in spans:
            row.start_time = began
        retry_in = _file_after(row, outcome, end)
        if retry_in is not None:
            retries.append(retry_in)
        changed.append(row)
    update_rows(TransferAttempt, ended, ["state", "started", "finished", "reason", "copy_params"])
    update_rows(TransferFile, changed, FILE_OUTCOME_FIELDS)
    for row in changed:
        job = row.job
        if row.state == FileState.FAILED and row.dest_dirty:
            # Nothing is retried any more: what the attempts left at the destination goes.
            remove_destination_after_commit(row.dest_surl)
        if (row.state == FileState.FINISHED and job.job_type == JobType.MULTIHOP) or (
            row.state == FileState.FAILED and job.job_type == JobType.MULTI_SOURCE
        ):
            _promote_next(row)
    for job in {row.job_id: row.job for row in results}.values():
        settle_job(job)
    enqueue_dispatch()
    for retry_in in sorted(set(retries))[:1]:
        enqueue_dispatch(countdown=retry_in)  # the first retry's back-off ends: a dispatch for it
    return results


FILE_OUTCOME_FIELDS = [
    "state",
    "start_time",
    "reason",
    "finish_time",
    "retry_after",
    "duration_seconds",
    "source_checksum",
    "dest_checksum",
    "transferred_bytes",
    "progress_at",
    "progress_bps",
    "dest_dirty",
]


def _file_after(row: TransferFile, outcome: CopyOutcome, now: datetime) -> float | None:
    """Set the ACTIVE file ``row`` (its job loaded) as its attempt's ``outcome`` leaves it: FINISHED,
    FAILED, or SUBMITTED again for a retry; returns the retry's back-off in seconds, or None."""
    job = row.job
    row.duration_seconds = outcome.seconds
    row.source_checksum = outcome.source_checksum
    row.dest_checksum = outcome.dest_checksum
    if outcome.ok:
        row.state, row.reason, row.finish_time = FileState.FINISHED, "", now
        row.transferred_bytes, row.progress_at, row.progress_bps = outcome.bytes, None, None
        row.dest_dirty = False
        return None
    # What the failed attempt moved no longer counts: the next one starts again.
    row.transferred_bytes, row.progress_at, row.progress_bps = 0, None, None
    row.dest_dirty = row.dest_dirty or outcome.dest_touched
    if outcome.retryable and job.job_type == JobType.NORMAL and row.attempts <= job.retry:
        retry_in = job.retry_delay * (2 ** (row.attempts - 1))
        row.state, row.reason = FileState.SUBMITTED, f"attempt {row.attempts} failed: {outcome.error}"
        row.retry_after = now + timedelta(seconds=retry_in)
        return float(retry_in)
    row.state, row.finish_time = FileState.FAILED, now
    row.reason = outcome.error if row.attempts == 1 else f"after {row.attempts} attempts: {outcome.error}"
    return None


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
    # The row as just saved (locked, so no one else changed it): announced as it commits, not read again.
    transaction.on_commit(lambda: job_finished.send(sender=TransferJob, job=job))


def beat(attempt_id: int, progress: tuple[int, datetime, float | None] | None = None) -> bool:
    """Renew a running attempt's heartbeat; False once the attempt has ended (reaped or cancelled).
    ``progress``: the bytes the copy has at its destination, when they were seen and the pace of its last
    looks (bytes/s, or None), written on its file while it is active (what the push loop's predictions of
    arrival count as sent)."""
    alive = bool(
        TransferAttempt.objects.filter(pk=attempt_id, state=AttemptState.RUNNING).update(
            heartbeat=timezone.now()
        )
    )
    if alive and progress is not None:
        TransferFile.objects.filter(attempt_rows__pk=attempt_id, state=FileState.ACTIVE).update(
            transferred_bytes=progress[0], progress_at=progress[1], progress_bps=progress[2]
        )
    return alive


def reap_lost_attempts(*, lost_after: timedelta, unclaimed_after: timedelta) -> dict[str, int]:
    """Find work that nobody is doing any more, as FTS3's server does for url-copy processes that died:

    - a claimed attempt whose heartbeat stopped ``lost_after`` ago: its worker died (killed, its host lost).
      It fails as "worker lost" and its file retries; part of a file may be at the destination, so the
      retry overwrites it.
    - an attempt no worker claimed within ``unclaimed_after``: its task message was lost (the broker
      restarted or was flushed). It is sent again; claiming makes a second delivery harmless."""
    from django.db.models.functions import Coalesce

    now = timezone.now()
    lost = list(
        TransferAttempt.objects.filter(state=AttemptState.RUNNING, claimed__isnull=False)
        .annotate(alive=Coalesce("heartbeat", "claimed"))
        .filter(alive__lt=now - lost_after)
        .values_list("pk", flat=True)
    )
    for attempt_id in lost:
        finish_attempt(
            attempt_id,
            CopyOutcome(
                ok=False,
                seconds=0.0,
                error=f"worker lost during the copy (no heartbeat for {lost_after.total_seconds():.0f} s)",
            ),
        )
    unclaimed = list(
        TransferAttempt.objects.filter(
            state=AttemptState.RUNNING, claimed__isnull=True, started__lt=now - unclaimed_after
        ).values_list("pk", flat=True)
    )
    if unclaimed:
        transaction.on_commit(lambda: enqueue_attempts(unclaimed))
    return {"lost": len(lost), "resent": len(unclaimed)}
