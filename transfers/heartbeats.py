"""Heartbeats of running copies: a thread beside the copy (gfal2 holds the calling thread) renews its
attempts' heartbeats, so the reaper can tell a slow copy from a dead worker, and writes a copy's progress."""

from __future__ import annotations

import abc
import itertools
import logging
import threading
import time
from collections import deque
from dataclasses import dataclass
from datetime import datetime

from django.db import InterfaceError, OperationalError, connection
from django.utils import timezone

from . import services

log = logging.getLogger(__name__)


class _Beating(abc.ABC):
    """A thread that calls ``beat()`` every ``interval`` seconds while the block runs, until it returns
    False (the attempt ended); a database that is restarting is beaten again next time."""

    def __init__(self, interval: float, name: str) -> None:
        self.interval = interval
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)

    @abc.abstractmethod
    def beat(self) -> bool:
        """Renew the heartbeat(s) once; False once there is nothing left to beat for."""

    def __enter__(self):  # type: ignore[no-untyped-def]
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=self.interval + 5)

    def _run(self) -> None:
        try:
            while not self.stop.wait(self.interval):
                try:
                    if not self.beat():
                        return
                except (OperationalError, InterfaceError):
                    connection.close()  # the database is restarting: beat again next time
        finally:
            connection.close()


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


class Heartbeat(_Beating):
    """Renews an attempt's heartbeat from a thread of its own while the copy runs (gfal2 holds the
    calling thread), so the reaper can tell a slow copy from a dead worker; each beat also writes the
    copy's progress, the last size the stall watch saw at the destination (``saw``)."""

    def __init__(self, attempt_id: int, interval: float, began: float | None = None) -> None:
        super().__init__(interval, f"heartbeat-{attempt_id}")
        self.attempt_id = attempt_id
        # When the copy began (``time.monotonic()``): no byte can have reached its destination before.
        self.began = time.monotonic() if began is None else began
        self._first: Look | None = None
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
        read 7 s of bytes).

        While the window still holds the copy's first look, the bytes are counted from the copy's
        beginning (``began``, size 0), not from that look: a destination whose writer was held up (a busy
        disk) showed 0 bytes at its first look while the pull had received seconds of data, which then
        landed at once and read as 15-19 MB/s for a source paced at 8 MiB/s (tests/faults/test_progress.py,
        a whole run, 2026-11-30). Every byte there arrived after the copy began, so this never overstates;
        it understates a young copy by its start (the rendezvous, its first round trips), which the window
        forgets after PACE_WINDOW_SECONDS."""
        grew = self._last is None or size > self._last.size
        look = Look(asked, answered, size, grew)
        if self._first is None:
            self._first = look
        self._last = look
        self._looks.append(look)
        while len(self._looks) > 2 and self._may_forget_oldest(answered):
            self._looks.popleft()
        self.progress = (size, timezone.now(), self._pace(look))
        log.debug(
            "attempt %d looked: %d bytes, asked %.3f, answered %.3f (began %.3f), pace %s",
            self.attempt_id,
            size,
            asked,
            answered,
            self.began,
            self.progress[2],
        )

    def _pace(self, latest: Look) -> float | None:
        growths = [kept for kept in self._looks if kept.grew]
        first = growths[0] if growths else self._looks[0]
        if latest.answered - first.asked < PACE_SPAN_SECONDS:
            return None
        # The span's start: the copy's beginning while its first look is kept, else the first growth kept.
        from_size, from_time = (0, self.began) if self._looks[0] is self._first else (first.size, first.asked)
        if len(growths) >= 2:
            # Between growths (a pause no longer than they have been apart): their bytes over their time.
            last = growths[-1]
            apart = last.answered - first.asked
            if apart >= PACE_SPAN_SECONDS and latest.answered - last.answered <= apart / (len(growths) - 1):
                return (last.size - from_size) / (last.answered - from_time)
        # Else up to now: a copy that stopped growing slows down.
        return (latest.size - from_size) / (latest.answered - from_time)

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

    def beat(self) -> bool:
        return services.beat(self.attempt_id, self.progress)


class SessionHeartbeat(_Beating):
    """Renews the heartbeats of a copy session's attempts still to finish (as ``Heartbeat`` does one
    attempt's), and learns which of them ended meanwhile (cancelled: ``ended``)."""

    def __init__(self, attempt_ids: list[int], interval: float) -> None:
        super().__init__(interval, "heartbeat-session")
        self._remaining = set(attempt_ids)
        self.ended: set[int] = set()

    def finished(self, attempt_id: int) -> None:
        self._remaining = self._remaining - {attempt_id}  # replaced whole: the thread reads one reference

    def beat(self) -> bool:
        remaining = self._remaining
        if remaining:
            self.ended = self.ended | (remaining - services.beat_session(sorted(remaining)))
        return True
