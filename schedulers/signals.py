"""The push loop follows every push transfer of the embedded service: what each lane delivered, and a
lane that freed."""

from __future__ import annotations

from django.conf import settings
from django.dispatch import receiver

from transfers.choices import FileState, JobState
from transfers.signals import job_finished
from transfertools.interface import FileSpan

from .measurements import record_lane_measurement
from .own_jobs import submitted_by_push_loop
from .services import request_push_cycle


@receiver(job_finished)
def record_lane_throughput(sender, job, **kwargs):  # type: ignore[no-untyped-def]
    """One measurement per finished push job (``measurements.record_lane_measurement``), of the push
    loop's own jobs only (``own_jobs``): any other client may write a ``lane`` into its job's metadata."""
    if not (job.metadata or {}).get("lane") or not submitted_by_push_loop(job.submitter):
        return
    record_lane_measurement(
        job_id=str(job.job_id),
        metadata=job.metadata,
        files=[
            FileSpan(finished=True, bytes=size, start=start, end=end)
            for size, start, end in job.files.filter(state=FileState.FINISHED).values_list(
                "transferred_bytes", "start_time", "finish_time"
            )  # only what arrived counts
        ],
        succeeded=job.state == JobState.FINISHED,
    )


@receiver(job_finished)
def next_cycle_when_a_lane_frees(sender, job, **kwargs):  # type: ignore[no-untyped-def]
    """A push job ended: its lane is free, so the next product on it goes now rather than at the next beat
    (an idle lane between two products is what keeps an access link below its target)."""
    if (job.metadata or {}).get("lane") and settings.SRCNET_PUSH_ON_SETTLE:
        request_push_cycle()
