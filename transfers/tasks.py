"""Celery tasks of the transfer service: thin wrappers that take ids and call services."""

from __future__ import annotations

import itertools
import logging
import os
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from celery import shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError, close_old_connections, connection
from django.utils import timezone

from . import faults, services
from .executor import CopyOutcome, CopySession, copy_with_tokens
from .services.common import dispatch_begins

log = logging.getLogger(__name__)


@shared_task(name="transfers.dispatch", autoretry_for=(OperationalError,), retry_backoff=True, max_retries=5)
def dispatch() -> int:
    """Admit waiting files to their links; the executions are enqueued on commit."""
    dispatch_begins()
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
    _record([(attempt_id, outcome)])
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
    session = CopySession()
    # A session's files share their job and link, so their streams too.
    streams = services.stream_settings(attempts[0].file)
    done: list[tuple[int, CopyOutcome]] = []
    spans: dict[int, tuple[datetime, datetime]] = {}  # each copy's beginning and end
    counts = {"ok": 0, "failed": 0, "skipped": 0}
    with SessionHeartbeat([a.pk for a in attempts], float(config["HEARTBEAT_SECONDS"])) as heartbeat:
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
                _record(done, spans)
                done, recorded_at = [], time.monotonic()
        if done:
            _record(done, spans)
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
    tries: int = 12,
) -> None:
    """Record outcomes, waiting out a database that is restarting (the copies are done: redoing them would
    cost more than waiting). If the database stays away, the reaper retries the files later."""
    for attempt in range(tries):
        try:
            services.finish_attempts(outcomes, spans=spans)
            return
        except (OperationalError, InterfaceError):
            if attempt == tries - 1:
                raise
            log.warning("recording %s attempts: database unavailable, trying again", len(outcomes))
            close_old_connections()
            connection.close()
            time.sleep(min(2.0**attempt, 5.0))


# A copy's pace is measured over its looks at the destination in the last PACE_WINDOW_SECONDS (longer, up to
# PACE_WINDOW_MAX_SECONDS, while they hold fewer than two growths), and only once they span PACE_SPAN_SECONDS
# (a TCP connection's first seconds are its slow start).
PACE_WINDOW_SECONDS = 10.0
PACE_WINDOW_MAX_SECONDS = 60.0
PACE_SPAN_SECONDS = 4.0


@dataclass(frozen=True)
class Look:
    """One look at a copy's destination: asked and answered (``time.monotonic()``), the size it read, and
    whether the size had grown since the look before (or it was the copy's first look)."""

    asked: float
    answered: float
    size: int
    grew: bool


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
        self._looks: deque[Look] = deque()
        self._last: Look | None = None

    def saw(self, size: int, asked: float, answered: float) -> None:
        """The copy had ``size`` bytes at its destination at some moment between ``asked`` and ``answered``
        (``time.monotonic()``; called from the stall watch's thread). Its pace is that of its recent looks
        (``_may_forget_oldest``: a connection that crawled and recovered is not held to its past), once they
        span ``PACE_SPAN_SECONDS``.

        A destination's size grows in bursts when its writer lands many reads at once (the local sites' pull
        keeps 16 reads of 8 MiB in flight and writes in order): measured from a look inside a pause to one
        just after a burst, a span counted a burst's bytes over part of its time (a whole run recorded
        14.6 MB/s for a copy of 8 MB/s). So the pace is the bytes between the first and the last look that
        saw the size grow, over their time, while the pause since the last is no longer than the growths
        have been apart; past that, the bytes since the first growth up to now, so a copy that stopped
        growing slows down. Spans run from a look's asking to a look's answer: a slow answer lowers the
        pace, never raises it (timed at its answer, a first look answered 3 s late would make 4 s of looks
        read 7 s of bytes)."""
        grew = self._last is None or size > self._last.size
        look = Look(asked, answered, size, grew)
        self._last = look
        self._looks.append(look)
        while len(self._looks) > 2 and self._may_forget_oldest(answered):
            self._looks.popleft()
        self.progress = (size, timezone.now(), self._pace(look))

    def _pace(self, latest: Look) -> float | None:
        growths = [kept for kept in self._looks if kept.grew]
        first = growths[0] if growths else self._looks[0]
        if latest.answered - first.asked < PACE_SPAN_SECONDS:
            return None
        if len(growths) >= 2:
            # Between growths (a pause no longer than they have been apart): their bytes over their time.
            last = growths[-1]
            between = last.answered - first.asked
            if between >= PACE_SPAN_SECONDS and latest.answered - last.answered <= between / (
                len(growths) - 1
            ):
                return (last.size - first.size) / between
        # Else up to now: a copy that stopped growing slows down.
        return (latest.size - first.size) / (latest.answered - first.asked)

    def _may_forget_oldest(self, now: float) -> bool:
        """The oldest look goes once the rest span PACE_WINDOW_SECONDS and still hold two growths (a pace
        between bursts needs two; a destination that grows in big bursts keeps a longer window), or once
        the rest span PACE_WINDOW_MAX_SECONDS whatever they hold (a copy that stopped growing reads 0)."""
        age = now - self._looks[1].asked
        if age >= PACE_WINDOW_MAX_SECONDS:
            return True
        return (
            age >= PACE_WINDOW_SECONDS
            and sum(look.grew for look in itertools.islice(self._looks, 1, None)) >= 2
        )

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


class SessionHeartbeat:
    """Renews the heartbeats of a copy session's attempts still to finish, from a thread of its own (as
    ``Heartbeat`` does one attempt's), and learns which of them ended meanwhile (cancelled: ``ended``)."""

    def __init__(self, attempt_ids: list[int], interval: float) -> None:
        self.interval = interval
        self._remaining = set(attempt_ids)
        self.ended: set[int] = set()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="heartbeat-session", daemon=True)

    def finished(self, attempt_id: int) -> None:
        self._remaining = self._remaining - {attempt_id}  # replaced whole: the thread reads one reference

    def __enter__(self) -> SessionHeartbeat:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=self.interval + 5)

    def _run(self) -> None:
        try:
            while not self.stop.wait(self.interval):
                remaining = self._remaining
                if not remaining:
                    continue
                try:
                    running = services.beat_session(sorted(remaining))
                except (OperationalError, InterfaceError):
                    connection.close()  # the database is restarting: beat again next time
                    continue
                self.ended = self.ended | (remaining - running)
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
