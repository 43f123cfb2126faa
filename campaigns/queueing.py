"""Sending the campaigns' own tasks to the workers, by name: the services and the simulated run enqueue the
next step without importing the tasks (the tasks are thin callers of the services)."""

from __future__ import annotations

from typing import Any

from django.utils import timezone


def enqueue_advance(
    campaign_id: int, generation: int, *, eta: Any = None, countdown: float | None = None
) -> None:
    """The campaign's next step (``campaigns.advance``): at ``eta`` if it is still ahead, after
    ``countdown`` seconds, or now."""
    from celery import current_app

    options: dict[str, Any] = {}
    if eta is not None and eta > timezone.now():
        options["eta"] = eta
    elif countdown:
        options["countdown"] = countdown
    current_app.send_task("campaigns.advance", args=[campaign_id, generation], **options)


def enqueue_cleanup(campaign_id: int) -> None:
    """Delete a finished campaign's synthetic files (``campaigns.clean_up``)."""
    from celery import current_app

    current_app.send_task("campaigns.clean_up", args=[campaign_id])
