"""Building transfer state for portal tests without workers: products pushed through the real services,
then files moved to ACTIVE or FINISHED as the executor would leave them."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from replicas.models import DataProduct
from replicas.selectors import pushed_job_ids
from replicas.services import FileSpec, register_product
from schedulers.services import push_product
from topology.models import StorageEndpoint, Telescope
from transfers.choices import FileState, JobState
from transfers.models import TransferFile, TransferJob

from ..factories import transfer_file


def pushed_product(
    name: str, *, telescope: str = "SKA1-Mid", files: int = 2, size: int = 10**9
) -> DataProduct:
    """A registered product placed by the default policy with its transfer job submitted (SUBMITTED)."""
    product = register_product(
        scope="ska",
        name=name,
        telescope=Telescope.objects.get(name=telescope),
        files=[FileSpec(f"{name}.part{i}.ms", size, "0cc737eb") for i in range(files)],
    )
    push_product(product=product)
    return product


def job_of(product: DataProduct) -> TransferJob:
    return TransferJob.objects.get(job_id__in=pushed_job_ids(product))


def start(job: TransferJob) -> None:
    """Mark the job's files ACTIVE, as dispatch does when it admits them."""
    now = timezone.now()
    job.files.update(state=FileState.ACTIVE, start_time=now, attempts=1)
    TransferJob.objects.filter(pk=job.pk).update(state=JobState.ACTIVE)


def finished_file(
    source: StorageEndpoint, dest: StorageEndpoint, *, seconds: float, nbytes: int
) -> TransferFile:
    """A finished copy between two endpoints, as the executor records it."""
    now = timezone.now()
    return transfer_file(
        TransferJob.objects.create(state=JobState.FINISHED),
        source=source,
        destination=dest,
        path=f"ska/h/{nbytes}-{seconds}",
        state=FileState.FINISHED,
        size=nbytes,
        duration_seconds=seconds,
        start_time=now - timedelta(seconds=seconds),
        finish_time=now,
    )
