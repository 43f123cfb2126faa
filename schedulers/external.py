"""Following jobs submitted to an FTS3 the platform does not run (``SRCNET_TRANSFERTOOL=fts3``).

The embedded service settles a replica through its in-process ``job_finished`` signal. An external FTS3
cannot send that, so the periodic ``schedulers.poll_external_jobs`` task asks each endpoint, in bulk, for
the state of every recorded job not yet settled, and settles the ended ones through the same
``replicas.services.settle_request`` the signal uses; a push-loop job's files also become a lane
measurement (``measurements.record_lane_measurement``), as the signal's do."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from transfertools.interface import Transfertool, TransfertoolError

from .measurements import record_lane_measurement
from .models import ExternalJob
from .services import request_push_cycle
from .transfertools import fts3_transfertool_for

TERMINAL = ("FINISHED", "FINISHEDDIRTY", "FAILED", "CANCELED")
# Polls in a row that do not find a job before its replica is failed (FTS3 purges old jobs; a job it
# never knew, e.g. after a database restore, would otherwise keep its replica COPYING forever).
MAX_MISSES = 10


@dataclass
class PollReport:
    polled: int = 0
    settled: list[str] = field(default_factory=list)
    measured: list[str] = field(default_factory=list)  # jobs that added a lane measurement
    errors: list[str] = field(default_factory=list)


def poll_external_jobs(
    tool_for: Callable[[str], Transfertool] | None = None, *, limit: int = 1000
) -> PollReport:
    """Ask each endpoint for its outstanding jobs (one bulk query per 100 ids) and settle those that
    ended. An endpoint that cannot be reached is reported and tried again at the next poll."""
    tool_for = tool_for or (lambda endpoint: fts3_transfertool_for(endpoint, follow=False))
    report = PollReport()
    outstanding = list(ExternalJob.objects.filter(settled__isnull=True).order_by("polled", "id")[:limit])
    by_endpoint: dict[str, list[ExternalJob]] = {}
    for row in outstanding:
        by_endpoint.setdefault(row.endpoint, []).append(row)
    for endpoint, rows in by_endpoint.items():
        try:
            tool = tool_for(endpoint)
            states = tool.job_states([r.job_id for r in rows])
            unsuccessful = [j for j, s in states.items() if s in TERMINAL and s != "FINISHED"]
            reasons = tool.failure_reasons(unsuccessful) if unsuccessful else {}
            # The push loop's jobs (a lane in their metadata) also feed the lane measurement history.
            laned = [r.job_id for r in rows if states.get(r.job_id) in TERMINAL and r.metadata.get("lane")]
            spans = tool.file_spans(laned) if laned else {}
        except TransfertoolError as exc:
            report.errors.append(f"{endpoint}: {exc}")
            continue
        now = timezone.now()
        for row in rows:
            report.polled += 1
            state = states.get(row.job_id)
            if state is None:
                row.misses += 1
                ExternalJob.objects.filter(pk=row.pk).update(polled=now, misses=row.misses)
                if row.misses >= MAX_MISSES:
                    why = f"{endpoint} has not known the job for {row.misses} polls"
                    if settle_external_job(row.pk, "FAILED", [why]):
                        report.settled.append(row.job_id)
                continue
            ExternalJob.objects.filter(pk=row.pk).update(polled=now, misses=0, state=state)
            if state in TERMINAL and settle_external_job(row.pk, state, reasons.get(row.job_id, [])):
                report.settled.append(row.job_id)
                measured = record_lane_measurement(
                    job_id=row.job_id,
                    metadata=row.metadata,
                    files=spans.get(row.job_id, []),
                    succeeded=state == "FINISHED",
                )
                if measured is not None:
                    report.measured.append(row.job_id)
                if row.metadata.get("lane") and settings.SRCNET_PUSH_ON_SETTLE:
                    request_push_cycle()  # its lane is free: the next product on it goes now
    return report


@transaction.atomic
def settle_external_job(pk: int, state: str, reasons: list[str]) -> bool:
    """Settle one external job's replica; False if it was already settled (idempotent)."""
    from replicas.services import record_job_end

    row = ExternalJob.objects.select_for_update().get(pk=pk)
    if row.settled is not None:
        return False
    # The replica the job carries is the one whose copy request names it (one removed meanwhile: none).
    record_job_end(endpoint=row.endpoint, job_id=row.job_id, state=state, reasons=reasons)
    row.state, row.settled = state, timezone.now()
    row.save(update_fields=["state", "settled"])
    return True
