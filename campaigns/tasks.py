"""Celery tasks of the campaigns (thin: the work is in services)."""

from __future__ import annotations

from celery import shared_task
from django.db import OperationalError


@shared_task(
    name="campaigns.advance",
    acks_late=True,
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    max_retries=3,
)
def advance(campaign_id: int, generation: int) -> str:
    """One tick of a real campaign (it schedules the next), or a whole simulated campaign."""
    from .services import advance as run

    return run(campaign_id, generation)


@shared_task(name="campaigns.clean_up", acks_late=True)
def clean_up(campaign_id: int) -> int:
    """Delete a finished campaign's synthetic files and products (asked for with ``cleanup``)."""
    from .services import clean_up as run

    return run(campaign_id)


@shared_task(name="campaigns.fire", acks_late=True, autoretry_for=(OperationalError,), max_retries=3)
def fire(template_id: int) -> str:
    """A recurring campaign's schedule fired (django-celery-beat): start a new run of it."""
    from .services import fire as run

    return run(template_id)
