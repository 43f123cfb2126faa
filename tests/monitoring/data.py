"""Rows the monitoring tests scrape: products at an SDP and transfer files between reference endpoints."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from replicas.models import DataProduct, ProductFile
from topology.models import StorageEndpoint
from transfers.choices import FileState
from transfers.models import TransferFile, TransferJob

from ..factories import transfer_file

GIB = 2**30


def product(name: str, *, telescope: str, size: int, state: str, deadline_in: float | None) -> DataProduct:
    sdp = StorageEndpoint.objects.get(name=f"{telescope.upper()}_SDP")
    made = DataProduct.objects.create(
        scope="ska",
        name=name,
        telescope_id=sdp.site_id,
        source=sdp,
        state=state,
        deadline=timezone.now() + timedelta(seconds=deadline_in) if deadline_in is not None else None,
    )
    ProductFile.objects.create(product=made, name=f"{name}.ms", size_bytes=size, adler32="00000001")
    return made


def copy(
    job: TransferJob, index: int, *, source: str, destination: str, state: str, size: int
) -> TransferFile:
    """A push copy that ended two seconds after it started (FINISHED or FAILED), or has not ended."""
    done = state in (FileState.FINISHED, FileState.FAILED)
    return transfer_file(
        job,
        index,
        source=source,
        destination=destination,
        path=f"ska/p/f{index}",
        state=state,
        size=size,
        finish_time=timezone.now() if done else None,
        duration_seconds=2.0 if done else None,
        activity="push",
    )
