"""The plan behind push jobs submitted to an FTS3 the platform does not run (``SRCNET_TRANSFERTOOL=fts3``).

Such an FTS3 keeps its transfer rows to itself; the platform keeps one ``schedulers.ExternalJob`` per job it
submitted there, with the push job's metadata (lane, planned rate, streams, predicted arrival), its last
polled state and when the poll settled it (``schedulers/external.py``). A job not yet settled is in flight;
a job settled FINISHED has arrived, at the poll that found it (late by at most the poll's interval). When
the "external" FTS3 is the platform's own endpoint (tests, or a deployment pointing the push loop at its own
standalone FTS3 service) the job is also one of the platform's transfer rows, already counted: it is left
out here. Two queries each, whatever the rows (ADR 0003)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from schedulers.external import TERMINAL
from schedulers.models import ExternalJob
from transfers.models import TransferJob


def _held_by_the_platform(job_ids: Iterable[str]) -> set[str]:
    """The ids among ``job_ids`` that are also jobs of the platform's own transfer service."""
    ids = set()
    for job_id in job_ids:
        try:
            ids.add(uuid.UUID(job_id))
        except ValueError:
            continue  # not an FTS3 job id the platform could have issued
    if not ids:
        return set()
    return {str(i) for i in TransferJob.objects.filter(job_id__in=ids).values_list("job_id", flat=True)}


def external_jobs_in_flight() -> list[dict[str, Any]]:
    """The metadata of the push jobs in flight at an external FTS3."""
    rows = list(
        ExternalJob.objects.filter(settled__isnull=True, metadata__has_key="lane")
        .exclude(state__in=TERMINAL)
        .values_list("job_id", "metadata")
    )
    mirrored = _held_by_the_platform(job_id for job_id, _ in rows)
    return [metadata for job_id, metadata in rows if job_id not in mirrored]


def external_arrivals(since: datetime) -> list[tuple[dict[str, Any], datetime]]:
    """(metadata, settled) of the push jobs an external FTS3 finished, settled since ``since``."""
    rows = list(
        ExternalJob.objects.filter(
            state="FINISHED", settled__gte=since, metadata__has_key="predicted_arrival"
        ).values_list("job_id", "metadata", "settled")
    )
    mirrored = _held_by_the_platform(job_id for job_id, _, _ in rows)
    return [
        (metadata, settled)
        for job_id, metadata, settled in rows
        if job_id not in mirrored and settled is not None
    ]
