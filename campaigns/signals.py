"""A recurring campaign's periodic task goes with it, however the campaign is deleted (API, admin, shell)."""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_delete
from django.dispatch import receiver

from .models import Campaign


@receiver(post_delete, sender=Campaign, dispatch_uid="campaigns.delete_periodic_task")
def delete_periodic_task(sender: Any, instance: Campaign, **kwargs: Any) -> None:
    if instance.periodic_task_id is None:
        return
    from django_celery_beat.models import PeriodicTask

    # A model delete (not a raw one): django-celery-beat's signal tells the beat scheduler.
    PeriodicTask.objects.filter(pk=instance.periodic_task_id).delete()
