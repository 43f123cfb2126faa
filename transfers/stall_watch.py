"""A copy that stops making progress fails in bounded time (a no-progress timeout, not a total one).

A third-party copy whose path is black-holed (a cut link, a dead route) stalls: its TCP connections wait
for acknowledgements that never come, and XrdCl or davix wait for the whole copy's timeout (FTS3's 600 s
plus 2 s per MiB) before giving up. Lowering that timeout would fail slow but healthy long copies, so
instead a watcher looks at the destination's file while the copy runs: when its size has not grown for
``stall_seconds`` (and the file is not complete yet) it cancels the copy through gfal2, and the copy fails
as stalled (a network reason: the transfer service retries it, the push loop may then take another lane).
Once every byte is there the watcher stops: the destination's checksum of a large file may take minutes.

A copy session's copies (copy_sessions.py) share one watcher thread (``Watcher``): starting and joining a
thread for each copy cost 134 us of CPU a copy, 5 % of the worker's time a file between mock endpoints
(docs/benchmarks/control-plane.md)."""

from __future__ import annotations

import errno
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from .gfal_context import new_context
from .tokens import TokenError, redact

STALLED = "TRANSFER stalled"
# A look whose answer takes longer than this is logged: its size was read somewhere in that time, so the
# copy's pace is measured from the look's asking (heartbeats.Heartbeat); a slow destination is worth seeing.
SLOW_LOOK_SECONDS = 1.0

log = logging.getLogger(__name__)


class StallWatch:
    """What the watcher saw of one copy: ``stalled`` once it cancelled the copy, with the size the copy got
    to."""

    def __init__(
        self,
        stall_seconds: float,
        filesize: int | None,
        on_progress: Callable[[int, float, float], None] | None = None,
        look_seconds: float = 5.0,
    ) -> None:
        self.stall_seconds = stall_seconds
        self.filesize = filesize
        self.stalled = False
        self.size = 0
        self.on_progress = on_progress
        self.look_seconds = look_seconds
        self.interval = min(look_seconds, max(0.5, stall_seconds / 5))
        self.last_growth = time.monotonic()

    @property
    def error(self) -> str:
        return (
            f"{STALLED}: no progress at the destination for {self.stall_seconds:.0f} s "
            f"({self.size} of {self.filesize if self.filesize is not None else '?'} bytes there), cancelled"
        )

    def saw(self, size: int | None, asked: float, answered: float) -> bool:
        """Take in one look's answer (``size``: -1 when the file is not there yet, None when the destination
        could not tell); returns whether to look again. Sets ``stalled`` when the copy must be cancelled."""
        if size is None:
            # Cannot tell (refused, unreachable): never a reason to cancel.
            self.last_growth = time.monotonic()
            return True
        if self.filesize is not None and size >= self.filesize:
            self._progress(size, asked, answered)
            return False  # every byte is there: what remains (checksums) is not a stall
        if size >= 0:
            self._progress(size, asked, answered)  # every look, grown or not: the pace counts pauses too
        if size > self.size:
            self.size, self.last_growth = size, time.monotonic()
        elif time.monotonic() - self.last_growth >= self.stall_seconds:
            self.stalled = True
            return False
        return True

    def _progress(self, size: int, asked: float, answered: float) -> None:
        if self.on_progress is not None:
            self.on_progress(size, asked, answered)


@dataclass
class _Watched:
    watch: StallWatch
    copying: Any  # what is cancelled: a gfal2 context, or the rendezvous copy
    destination: Callable[[], str]
    authorize: Callable[[Any], None] | None
    next_look: float
    looking: bool = True


class Watcher:
    """One thread that watches copies one after another (a copy session's), each from its beginning.

    The thread sleeps until the copy's next look; a copy that ends before its first look (a short copy's)
    costs no wake-up and no gfal2 context. The look itself runs without the lock; what it found is acted on
    only if the same copy is still being watched, so a cancel never reaches the copy after it."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._watched: _Watched | None = None
        self._thread: threading.Thread | None = None
        self._idle = False
        self._closed = False
        self._probe: Any = None  # the watcher's own gfal2 context (the copy's is busy copying)

    @contextmanager
    def watching(
        self,
        watch: StallWatch,
        copying: Any,
        destination: Callable[[], str],
        authorize: Callable[[Any], None] | None = None,
    ) -> Iterator[StallWatch]:
        watch.last_growth = time.monotonic()
        watched = _Watched(watch, copying, destination, authorize, watch.last_growth + watch.interval)
        with self._lock:
            if self._closed:
                raise RuntimeError("the watcher is closed")
            self._watched = watched
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="stall-watch", daemon=True)
                self._thread.start()
            elif self._idle:
                self._lock.notify()  # a busy watcher finds the new copy when it wakes for the last one
        try:
            yield watch
        finally:
            with self._lock:
                if self._watched is watched:
                    self._watched = None

    def close(self, timeout: float = 10.0) -> None:
        """Stop the thread (a look under way is waited for at most ``timeout`` seconds)."""
        with self._lock:
            self._closed, self._watched = True, None
            self._lock.notify()
            thread = self._thread
        if thread is not None:
            thread.join(timeout=timeout)

    def _run(self) -> None:
        while True:
            with self._lock:
                watched = self._next_due()
                if watched is None:
                    return
            size, asked, answered = self._look(watched)
            with self._lock:
                if self._watched is not watched:
                    continue  # that copy ended meanwhile: what was seen of it no longer matters
                watched.looking = watched.watch.saw(size, asked, answered)
                watched.next_look = time.monotonic() + watched.watch.interval
                if watched.watch.stalled:
                    watched.copying.cancel()

    def _next_due(self) -> _Watched | None:
        """Wait (holding the lock) until the watched copy's next look, and return it; None once closed."""
        while not self._closed:
            watched = self._watched
            if watched is None or not watched.looking:
                self._idle = True
                self._lock.wait()
                self._idle = False
                continue
            wait = watched.next_look - time.monotonic()
            if wait <= 0:
                return watched
            self._lock.wait(wait)
        return None

    def _look(self, watched: _Watched) -> tuple[int | None, float, float]:
        """The destination's size (-1: not there; None: could not tell), with when it was asked and
        answered."""
        import gfal2

        asked = time.monotonic()
        try:
            self._probe = self._probe or new_context()
            if watched.authorize is not None:
                watched.authorize(self._probe)  # the copy's tokens, renewed when close to their end
            size: int | None = int(self._probe.stat(watched.destination()).st_size)
        except (gfal2.GError, TokenError) as exc:
            if isinstance(exc, TokenError):
                log.error("look at %s: %s", redact(watched.destination()), exc)
            size = -1 if getattr(exc, "code", None) == errno.ENOENT else None
        answered = time.monotonic()
        if answered - asked > SLOW_LOOK_SECONDS:
            log.warning(
                "look at %s: %s bytes, answered in %.2f s",
                redact(watched.destination()),
                size,
                answered - asked,
            )
        return size, asked, answered


@contextmanager
def stall_watch(
    copying: Any,
    destination: Callable[[], str],
    *,
    stall_seconds: float,
    filesize: int | None,
    authorize: Callable[[Any], None] | None = None,
    on_progress: Callable[[int, float, float], None] | None = None,
    look_seconds: float = 5.0,
    watcher: Watcher | None = None,
) -> Iterator[StallWatch]:
    """Watch the copy ``copying`` (a gfal2 context) makes to the URL ``destination()`` gives inside the block
    (stat with the copy's token, which ``authorize`` sets on the watch's own context, every ``look_seconds``
    at most); no watcher when ``stall_seconds`` is 0.
    Only a destination that answers and has not grown counts as no progress: a stat that fails for another
    reason than a missing file never cancels a copy. ``on_progress`` hears the size of each look with the
    ``time.monotonic()`` of its asking and of its answer, between which the size was read (from the
    watcher's thread). ``watcher``: a copy session's (kept for its next copies), else one for this copy."""
    watch = StallWatch(stall_seconds, filesize, on_progress, look_seconds)
    if stall_seconds <= 0:
        yield watch
        return
    own = watcher is None
    watcher = watcher or Watcher()
    try:
        with watcher.watching(watch, copying, destination, authorize):
            yield watch
    finally:
        if own:
            watcher.close()
