"""Helpers shared by the transfer services."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.db import transaction

log = logging.getLogger(__name__)


def transfer_settings() -> dict[str, Any]:
    return settings.SRCNET_TRANSFERS


def send_task(name: str, *args: Any, countdown: float = 0.0, task_id: str | None = None) -> str:
    """Send the task ``name`` to the workers now (as ``task_id``, if given); returns the message's id. By
    name: the services do not import the tasks (the tasks are thin callers of the services)."""
    from srcnet.task_queue import app

    return str(app.send_task(name, args=list(args), countdown=countdown or None, task_id=task_id).id)


# A dispatch asked for and not yet begun, per task queue (one platform's workers): every commit that may free
# or fill a slot asks for a dispatch, and at a file rate that is hundreds a second. Each would take a worker
# process and wait in line for the dispatch lock, starving the copies (bench/control_plane/end_to_end.py:
# 1 544 dispatches of 3.8 s each for 1 340 copies); one waiting dispatch sees every change made before it
# begins, so the others are not sent. The mark expires, so a lost message delays the next dispatch by at
# most this long (the beat's sweep dispatches every few seconds anyway).
DISPATCH_PENDING_SECONDS = 30


def dispatch_pending_key() -> str:
    from srcnet.task_queue import app

    return f"srcnet:transfers:dispatch-pending:{app.conf.task_default_queue}"


def _broker_client() -> Any:
    from srcnet.task_queue import broker_redis

    return broker_redis()


def enqueue_dispatch(countdown: float = 0.0) -> None:
    """Ask a worker to dispatch (after the current transaction commits, if any), unless a dispatch asked
    for earlier has not begun yet (it will see this change); a dispatch later (``countdown``, a retry's
    back-off) is always sent."""

    def ask() -> None:
        if countdown or _first_ask():
            send_task("transfers.dispatch", countdown=countdown)

    transaction.on_commit(ask)


def _first_ask() -> bool:
    """Whether no dispatch asked for earlier is still waiting to begin (and mark that one is now). A broker
    that cannot answer is no reason to ask for nothing: the task is sent, as before the marks existed."""
    import redis

    try:
        return bool(_broker_client().set(dispatch_pending_key(), "1", nx=True, ex=DISPATCH_PENDING_SECONDS))
    except redis.RedisError:
        log.warning("dispatch mark unavailable; sending the dispatch", exc_info=True)
        return True


def dispatch_begins() -> None:
    """A dispatch begins: what commits from now on asks for another (it may come after this one's look). If
    the broker cannot take the mark away, it expires (DISPATCH_PENDING_SECONDS) and the sweep dispatches."""
    import redis

    try:
        _broker_client().delete(dispatch_pending_key())
    except redis.RedisError:
        log.warning("dispatch mark not cleared; it expires in %s s", DISPATCH_PENDING_SECONDS, exc_info=True)


def send_attempts(messages: list[tuple[int, str]]) -> None:
    """Send each attempt's execution to the workers, as the task id its row already holds."""
    for attempt_id, task_id in messages:
        send_task("transfers.execute_attempt", attempt_id, task_id=task_id)


def enqueue_attempts(attempt_ids: list[int]) -> None:
    """Send each attempt's execution to the workers (again, for one whose message was lost)."""
    import uuid

    from ..models import TransferAttempt

    messages = [(attempt_id, str(uuid.uuid4())) for attempt_id in attempt_ids]
    for attempt_id, task_id in messages:  # recorded before sent, as the dispatch does
        TransferAttempt.objects.filter(pk=attempt_id).update(task_id=task_id)
    send_attempts(messages)


def remove_destination_after_commit(url: str, countdown: float = 0.0) -> None:
    """Have a worker remove what a failed or cancelled copy left at ``url``, once this transaction commits."""
    transaction.on_commit(lambda: send_task("transfers.remove_partial_destination", url, countdown=countdown))
