"""The push loop learns from every push transfer of the embedded service: what each lane delivered."""

from __future__ import annotations

from django.dispatch import receiver

from transfers.choices import FileState, JobState
from transfers.signals import job_finished

from .measurements import FileSpan, record_lane_measurement


@receiver(job_finished)
def record_lane_throughput(sender, job, **kwargs):  # type: ignore[no-untyped-def]
    """One measurement per finished push job (``measurements.record_lane_measurement``)."""
    if not (job.metadata or {}).get("lane"):
        return
    record_lane_measurement(
        job_id=str(job.job_id),
        metadata=job.metadata,
        files=[
            FileSpan(finished=True, bytes=f.transferred_bytes, start=f.start_time, end=f.finish_time)
            for f in job.files.filter(state=FileState.FINISHED)  # only what arrived counts
        ],
        succeeded=job.state == JobState.FINISHED,
    )
