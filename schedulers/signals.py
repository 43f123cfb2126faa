"""The push loop learns from every push transfer: what each lane delivered, with how many streams."""

from __future__ import annotations

from django.dispatch import receiver

from transfers.choices import FileState, JobState
from transfers.signals import job_finished

from .models import PathMeasurement


@receiver(job_finished)
def record_lane_throughput(sender, job, **kwargs):  # type: ignore[no-untyped-def]
    """One measurement per finished push job: bytes over the span from the first start to the last end."""
    lane = (job.metadata or {}).get("lane")
    if not lane or job.metadata.get("multihop"):
        return  # a relay's two hops are not one lane's throughput
    files = list(job.files.filter(state=FileState.FINISHED))
    starts = [f.start_time for f in files if f.start_time]
    ends = [f.finish_time for f in files if f.finish_time]
    if not files or not starts or not ends:
        return
    seconds = max((max(ends) - min(starts)).total_seconds(), 1e-3)
    total = sum(f.transferred_bytes for f in files)
    PathMeasurement.objects.create(
        source=lane[0],
        destination=lane[1],
        streams=int(job.metadata.get("streams") or 1),
        files=int(job.metadata.get("files") or 1),
        bytes=total,
        seconds=seconds,
        throughput_bps=total * 8 / seconds,
        succeeded=job.state == JobState.FINISHED,
        job_id=str(job.job_id),
    )
