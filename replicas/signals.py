"""Replicas follow the transfer jobs that create them: by their copy requests, never by a job's metadata."""

from django.dispatch import receiver

from transfers.signals import job_finished

from . import services


@receiver(job_finished)
def update_replicas_from_job(sender, job, **kwargs):  # type: ignore[no-untyped-def]
    services.record_embedded_job_end(job)
