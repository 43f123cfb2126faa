"""Celery tasks of the transfer service: thin wrappers that take ids and call services."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections import deque
from datetime import datetime, timedelta
from typing import Any

from celery import shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError, close_old_connections, connection
from django.utils import timezone

from . import faults, services
from .executor import CopyOutcome, copy_with_tokens

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
    config: dict[str, Any] = settings.SRCNET_TRANSFERS
    with Heartbeat(attempt_id, float(config["HEARTBEAT_SECONDS"])) as heartbeat:
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
            on_progress=heartbeat.saw,
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
    faults.reach(faults.AFTER_COPY)
    _record(attempt_id, outcome)
    return "ok" if outcome.ok else "failed"


def _record(attempt_id: int, outcome: CopyOutcome, tries: int = 12) -> None:
    """Record an outcome, waiting out a database that is restarting (the copy is done: redoing it would
    cost more than waiting). If the database stays away, the reaper retries the file later."""
    for attempt in range(tries):
        try:
            services.finish_attempt(attempt_id, outcome)
            return
        except (OperationalError, InterfaceError):
            if attempt == tries - 1:
                raise
            log.warning("recording attempt %s: database unavailable, trying again", attempt_id)
            close_old_connections()
            connection.close()
            time.sleep(min(2.0**attempt, 5.0))


# A copy's pace is measured over its looks at the destination in the last PACE_WINDOW_SECONDS, and only once
# they span PACE_SPAN_SECONDS (a TCP connection's first seconds are its slow start).
PACE_WINDOW_SECONDS = 10.0
PACE_SPAN_SECONDS = 4.0


class Heartbeat:
    """Renews an attempt's heartbeat from a thread of its own while the copy runs (gfal2 holds the
    calling thread), so the reaper can tell a slow copy from a dead worker; each beat also writes the
    copy's progress, the last size the stall watch saw at the destination (``saw``)."""

    def __init__(self, attempt_id: int, interval: float) -> None:
        self.attempt_id, self.interval = attempt_id, interval
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"heartbeat-{attempt_id}", daemon=True)
        # (bytes, seen at, pace in bytes/s): replaced whole, one reference, so no lock is needed.
        self.progress: tuple[int, datetime, float | None] | None = None
        self._looks: deque[tuple[float, int]] = deque()

    def saw(self, size: int, asked: float, answered: float) -> None:
        """The copy had ``size`` bytes at its destination at some moment between ``asked`` and ``answered``
        (``time.monotonic()``; called from the stall watch's thread). Its pace is that of its looks over
        the last ``PACE_WINDOW_SECONDS``, once they span ``PACE_SPAN_SECONDS``: recent, so a connection that
        crawled and recovered is not held to its past. The span runs from the first look's asking to the
        last one's answer, never shorter than the time the bytes took: a slow answer lowers the pace, never
        raises it (timed at its answer, a first look answered 3 s late would make 4 s of looks read 7 s of
        bytes)."""
        self._looks.append((asked, size))
        while len(self._looks) > 2 and answered - self._looks[1][0] >= PACE_WINDOW_SECONDS:
            self._looks.popleft()
        then, before = self._looks[0]
        span = answered - then
        pace = (size - before) / span if span >= PACE_SPAN_SECONDS else None
        self.progress = (size, timezone.now(), pace)

    def __enter__(self) -> Heartbeat:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=self.interval + 5)

    def _run(self) -> None:
        try:
            while not self.stop.wait(self.interval):
                try:
                    if not services.beat(self.attempt_id, self.progress):
                        return
                except (OperationalError, InterfaceError):
                    # The database is restarting: beat again next time.
                    connection.close()
        finally:
            connection.close()


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
