"""Replicas follow the transfer jobs that create them."""

from django.dispatch import receiver

from transfers.signals import job_finished

from . import services


@receiver(job_finished)
def update_replica_from_job(sender, job, **kwargs):  # type: ignore[no-untyped-def]
    replica_id = (job.metadata or {}).get("replica_id")
    if replica_id:
        services.record_replica_transfer(replica_id=int(replica_id), job=job)
