"""Helpers shared by the transfer services."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction

from srcnet.pending_asks import PendingAsk


def transfer_settings() -> dict[str, Any]:
    return settings.SRCNET_TRANSFERS


def send_task(name: str, *args: Any, countdown: float = 0.0, task_id: str | None = None) -> str:
    """Send the task ``name`` to the workers now (as ``task_id``, if given); returns the message's id. By
    name: the services do not import the tasks (the tasks are thin callers of the services)."""
    from srcnet.task_queue import app

    return str(app.send_task(name, args=list(args), countdown=countdown or None, task_id=task_id).id)


# A dispatch asked for and not yet begun, per task queue (srcnet/pending_asks.py): every commit that may
# free or fill a slot asks for a dispatch; each used to take a worker process and wait in line for the
# dispatch lock, starving the copies (bench/control_plane/end_to_end.py: 1 544 dispatches of 3.8 s each for
# 1 340 copies). A lost message delays the next dispatch by at most this long (the beat's sweep dispatches
# every few seconds anyway).
DISPATCH_PENDING_SECONDS = 30
DISPATCH_ASK = PendingAsk("transfers:dispatch", DISPATCH_PENDING_SECONDS)


def enqueue_dispatch(countdown: float = 0.0) -> None:
    """Ask a worker to dispatch (after the current transaction commits, if any), unless a dispatch asked
    for earlier has not begun yet (it will see this change); a dispatch later (``countdown``, a retry's
    back-off) is always sent."""

    def ask() -> None:
        if countdown or DISPATCH_ASK.first():
            send_task("transfers.dispatch", countdown=countdown)

    transaction.on_commit(ask)


def dispatch_begins() -> None:
    """A dispatch begins: what commits from now on asks for another (it may come after this one's look)."""
    DISPATCH_ASK.begins()


def send_copies(messages: list[tuple[str, list[int]]]) -> None:
    """Send each copy to the workers as the task id its attempts already hold: one attempt alone
    (``transfers.execute_attempt``), or a session's attempts (``transfers.execute_session``)."""
    for task_id, attempt_ids in messages:
        if len(attempt_ids) == 1:
            send_task("transfers.execute_attempt", attempt_ids[0], task_id=task_id)
        else:
            send_task("transfers.execute_session", attempt_ids, task_id=task_id)


def enqueue_attempts(attempt_ids: list[int]) -> None:
    """Send the executions of ``attempt_ids`` to the workers again (their message was lost), each session's
    attempts together again, under a new message id."""
    import uuid

    from ..models import TransferAttempt, TransferFile

    sessions: dict[str, list[int]] = {}
    for attempt_id, task_id in (
        TransferAttempt.objects.filter(pk__in=attempt_ids).order_by("pk").values_list("pk", "task_id")
    ):
        sessions.setdefault(task_id or str(attempt_id), []).append(attempt_id)
    messages = [(str(uuid.uuid4()), ids) for ids in sessions.values()]
    for task_id, ids in messages:  # recorded before sent, as the dispatch does
        TransferAttempt.objects.filter(pk__in=ids).update(task_id=task_id)
        TransferFile.objects.filter(attempt_rows__pk__in=ids).update(copy_session=task_id)
    send_copies(messages)


def remove_destination_after_commit(url: str, countdown: float = 0.0) -> None:
    """Have a worker remove what a failed or cancelled copy left at ``url``, once this transaction commits."""
    transaction.on_commit(lambda: send_task("transfers.remove_partial_destination", url, countdown=countdown))


def attach_jobs(rows: list[Any], known: dict[int, Any] | None = None) -> None:
    """Give each TransferFile of ``rows`` its job, each job made once and without its metadata (nothing that
    moves files reads it): joined to every row, a job was made and its JSON decoded once per file, and a
    job's files travel together (a session's). ``known``: jobs loaded already (by id), not read again; what
    is read of them here (type, retries, checksum and overwrite options) never changes after submission."""
    from ..models import TransferJob

    jobs = dict(known or {})
    missing = {row.job_id for row in rows} - jobs.keys()
    if missing:
        jobs.update(TransferJob.objects.defer("metadata").in_bulk(missing))
    for row in rows:
        row.job = jobs[row.job_id]
