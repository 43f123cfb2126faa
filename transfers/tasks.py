"""Celery tasks of the transfer service: thin wrappers that take ids and call services."""

from __future__ import annotations

import logging
import os
import socket
import time
from datetime import datetime, timedelta
from typing import Any

from celery import shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError, close_old_connections, connection
from django.utils import timezone

from . import faults, services
from .executor import CopyOutcome, CopySession, copy_with_tokens
from .heartbeats import Heartbeat, SessionHeartbeat

log = logging.getLogger(__name__)


@shared_task(name="transfers.dispatch", autoretry_for=(OperationalError,), retry_backoff=True, max_retries=5)
def dispatch() -> int:
    """Admit waiting files to their links; the executions are enqueued on commit."""
    return len(services.dispatch())


@shared_task(
    name="transfers.execute_attempt",
    acks_late=True,
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    max_retries=5,
)
def execute_attempt(attempt_id: int) -> str:
    """Run one attempt's copy. A redelivered message finds the attempt claimed and does nothing."""
    try:
        attempt = services.claim_attempt(attempt_id, worker=f"{socket.gethostname()}:{os.getpid()}")
    except ValueError as exc:
        # A malformed message is dropped (retrying cannot fix it), and said so in the log.
        log.error("execute_attempt(%r) rejected: %s", attempt_id, exc)
        return f"rejected: {exc}"
    if attempt is None:
        return "already claimed"
    config: dict[str, Any] = settings.SRCNET_TRANSFERS
    with Heartbeat(attempt_id, float(config["HEARTBEAT_SECONDS"])) as heartbeat:
        outcome = _copy(attempt, on_progress=heartbeat.saw)
    faults.reach(faults.AFTER_COPY)
    _record([(attempt_id, outcome)], jobs={attempt.file.job_id: attempt.file.job})
    return "ok" if outcome.ok else "failed"


@shared_task(
    name="transfers.execute_session",
    acks_late=True,
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    max_retries=5,
)
def execute_session(attempt_ids: list[int]) -> str:
    """Run a copy session's copies one after another (transfers/copy_sessions.py): claimed together, one
    storage registry and gfal2 context, one heartbeat for those still to finish, their outcomes recorded
    together every RECORD_EVERY_SECONDS (so the files settle as they go, not all at the end). A redelivered
    message finds its attempts claimed and does nothing; one cancelled meanwhile is not copied."""
    try:
        attempts = services.claim_session(attempt_ids, worker=f"{socket.gethostname()}:{os.getpid()}")
    except ValueError as exc:
        log.error("execute_session rejected: %s", exc)
        return f"rejected: {exc}"
    if not attempts:
        return "already claimed"
    config: dict[str, Any] = settings.SRCNET_TRANSFERS
    # A session's files share their job and link, so their streams too.
    streams = services.stream_settings(attempts[0].file)
    done: list[tuple[int, CopyOutcome]] = []
    spans: dict[int, tuple[datetime, datetime]] = {}  # each copy's beginning and end
    counts = {"ok": 0, "failed": 0, "skipped": 0}
    heartbeat_seconds = float(config["HEARTBEAT_SECONDS"])
    jobs = {a.file.job_id: a.file.job for a in attempts}
    with CopySession() as session, SessionHeartbeat([a.pk for a in attempts], heartbeat_seconds) as heartbeat:
        recorded_at = time.monotonic()
        for attempt in attempts:
            if attempt.pk in heartbeat.ended:
                counts["skipped"] += 1
                continue
            began = timezone.now()
            outcome = _copy(attempt, session=session, streams=streams)
            spans[attempt.pk] = (began, timezone.now())
            counts["ok" if outcome.ok else "failed"] += 1
            faults.reach(faults.AFTER_COPY)
            done.append((attempt.pk, outcome))
            heartbeat.finished(attempt.pk)
            if time.monotonic() - recorded_at >= RECORD_EVERY_SECONDS:
                _record(done, spans, jobs)
                done, recorded_at = [], time.monotonic()
        if done:
            _record(done, spans, jobs)
    log.info("session of %s copies: %s", len(attempts), counts)
    return ", ".join(f"{n} {what}" for what, n in counts.items() if n)


# A session records what its copies did at least this often (seconds), in one transaction each time.
RECORD_EVERY_SECONDS = 1.0


def _copy(
    attempt: Any,
    *,
    on_progress: Any = None,
    session: CopySession | None = None,
    streams: tuple[int | None, int | None] | None = None,
) -> CopyOutcome:
    """Run the copy of a claimed ``attempt`` (its file and job loaded) and log its outcome; ``streams``:
    its TCP streams and buffer size, when known (``services.stream_settings``)."""
    row = attempt.file
    job = row.job
    nostreams, buffer_size = streams or services.stream_settings(row)
    outcome = copy_with_tokens(
        source=row.source_surl,
        destination=row.dest_surl,
        file=row,
        checksum=row.checksum,
        verify=job.verify_checksum,
        # What an earlier attempt of this file may have left at the destination is ours to replace.
        overwrite=job.overwrite or row.dest_dirty,
        timeout=job.timeout,
        filesize=row.filesize,
        nostreams=nostreams,
        buffer_size=buffer_size,
        on_progress=on_progress,
        scitag=row.scitag,
        attempt=attempt.number,
        session=session,
    )
    log.info(
        "attempt %s of %s -> %s: %s in %.2f s %s",
        attempt.number,
        row.source_surl,
        row.dest_surl,
        "ok" if outcome.ok else "failed",
        outcome.seconds,
        outcome.error,
    )
    return outcome


def _record(
    outcomes: list[tuple[int, CopyOutcome]],
    spans: dict[int, tuple[datetime, datetime]] | None = None,
    jobs: dict[int, Any] | None = None,
    tries: int = 12,
) -> None:
    """Record outcomes, waiting out a database that is restarting (the copies are done: redoing them would
    cost more than waiting). If the database stays away, the reaper retries the files later."""
    for attempt in range(tries):
        try:
            services.finish_attempts(outcomes, spans=spans, jobs=jobs)
            return
        except (OperationalError, InterfaceError):
            if attempt == tries - 1:
                raise
            log.warning("recording %s attempts: database unavailable, trying again", len(outcomes))
            close_old_connections()
            connection.close()
            time.sleep(min(2.0**attempt, 5.0))


@shared_task(name="transfers.remove_partial_destination")
def remove_partial_destination(url: str) -> str:
    """Delete what a stopped copy left at its destination (nothing to do if it left nothing)."""
    from .executor import remove_file

    return remove_file(url)


@shared_task(name="transfers.optimize")
def optimize() -> int:
    """One round of the link optimizer (FTS3's, every minute)."""
    from .services.optimization import optimize_links

    return len(optimize_links())


@shared_task(name="transfers.reap_lost_attempts")
def reap_lost_attempts() -> dict[str, int]:
    config: dict[str, Any] = settings.SRCNET_TRANSFERS
    return services.reap_lost_attempts(
        lost_after=timedelta(seconds=float(config["ATTEMPT_LOST_AFTER"])),
        unclaimed_after=timedelta(seconds=float(config["UNCLAIMED_AFTER"])),
    )
