"""Celery tasks of the transfer service: thin wrappers that take ids and call services."""

from __future__ import annotations

import logging
import os
import socket
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.db import OperationalError

from . import services
from .executor import copy_file

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
    row = attempt.file
    job = row.job
    nostreams, buffer_size = services.stream_settings(row)
    outcome = copy_file(
        source=row.source_surl,
        destination=row.dest_surl,
        checksum=row.checksum,
        verify=job.verify_checksum,
        overwrite=job.overwrite,
        timeout=job.timeout,
        filesize=row.filesize,
        bearer_token=str(settings.SRCNET_TRANSFERS["BEARER_TOKEN"]),
        nostreams=nostreams,
        buffer_size=buffer_size,
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
    services.finish_attempt(attempt_id, outcome)
    return "ok" if outcome.ok else "failed"


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
def reap_lost_attempts() -> int:
    return services.reap_lost_attempts(older_than=timedelta(hours=2))
