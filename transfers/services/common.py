"""Helpers shared by the transfer services."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction


def transfer_settings() -> dict[str, Any]:
    return settings.SRCNET_TRANSFERS


def send_task(name: str, *args: Any, countdown: float = 0.0) -> str:
    """Send the task ``name`` to the workers now; returns the message's id. By name: the services do not
    import the tasks (the tasks are thin callers of the services)."""
    from srcnet.task_queue import app

    return str(app.send_task(name, args=list(args), countdown=countdown or None).id)


def enqueue_dispatch(countdown: float = 0.0) -> None:
    """Ask a worker to dispatch (after the current transaction commits, if any)."""
    transaction.on_commit(lambda: send_task("transfers.dispatch", countdown=countdown))


def enqueue_attempts(attempt_ids: list[int]) -> None:
    """Send each attempt's execution to the workers (again, for one whose message was lost)."""
    from ..models import TransferAttempt

    for attempt_id in attempt_ids:
        task_id = send_task("transfers.execute_attempt", attempt_id)
        TransferAttempt.objects.filter(pk=attempt_id).update(task_id=task_id)


def remove_destination_after_commit(url: str, countdown: float = 0.0) -> None:
    """Have a worker remove what a failed or cancelled copy left at ``url``, once this transaction commits."""
    transaction.on_commit(lambda: send_task("transfers.remove_partial_destination", url, countdown=countdown))
