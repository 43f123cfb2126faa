"""A copy that stops making progress fails in bounded time (a no-progress timeout, not a total one).

A third-party copy whose path is black-holed (a cut link, a dead route) stalls: its TCP connections wait
for acknowledgements that never come, and XrdCl or davix wait for the whole copy's timeout (FTS3's 600 s
plus 2 s per MiB) before giving up. Lowering that timeout would fail slow but healthy long copies, so
instead a watcher looks at the destination's file while the copy runs: when its size has not grown for
``stall_seconds`` (and the file is not complete yet) it cancels the copy through gfal2, and the copy fails
as stalled (a network reason: the transfer service retries it, the push loop may then take another lane).
Once every byte is there the watcher stops: the destination's checksum of a large file may take minutes."""

from __future__ import annotations

import errno
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from .gfal_context import new_context
from .tokens import TokenError, redact

STALLED = "TRANSFER stalled"
# A look whose answer takes longer than this is logged: its size was read somewhere in that time, so the
# copy's pace is measured from the look's asking (heartbeats.Heartbeat); a slow destination is worth seeing.
SLOW_LOOK_SECONDS = 1.0

log = logging.getLogger(__name__)


class StallWatch:
    """What the watcher saw: ``stalled`` once it cancelled the copy, with the size the copy got to."""

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
        self._stop = threading.Event()

    @property
    def error(self) -> str:
        return (
            f"{STALLED}: no progress at the destination for {self.stall_seconds:.0f} s "
            f"({self.size} of {self.filesize if self.filesize is not None else '?'} bytes there), cancelled"
        )

    def run(
        self, copying: Any, destination: Callable[[], str], authorize: Callable[[Any], None] | None = None
    ) -> None:
        import gfal2

        # A context of its own (the copy's is busy copying), made at the first look: a copy that ends
        # before it (a small file's, a session's) costs no second context, which loads every plugin.
        probe: Any = None
        interval = min(self.look_seconds, max(0.5, self.stall_seconds / 5))
        last = time.monotonic()
        while not self._stop.wait(interval):
            asked = time.monotonic()
            try:
                probe = probe or new_context()
                if authorize is not None:
                    authorize(probe)  # the copy's tokens, renewed when close to their end
                size = int(probe.stat(destination()).st_size)
            except (gfal2.GError, TokenError) as exc:
                if isinstance(exc, TokenError):
                    log.error("look at %s: %s", redact(destination()), exc)
                if getattr(exc, "code", None) != errno.ENOENT:
                    last = time.monotonic()  # cannot tell (refused, unreachable): never a reason to cancel
                    continue
                size = -1  # not there yet: the pull is still opening the source, or stuck doing so
            answered = time.monotonic()
            if answered - asked > SLOW_LOOK_SECONDS:
                log.warning(
                    "look at %s: %d bytes, answered in %.2f s", redact(destination()), size, answered - asked
                )
            if self.filesize is not None and size >= self.filesize:
                self._progress(size, asked, answered)
                return  # every byte is there: what remains (checksums) is not a stall
            if size >= 0:
                self._progress(size, asked, answered)  # every look, grown or not: the pace counts pauses too
            if size > self.size:
                self.size, last = size, time.monotonic()
            elif time.monotonic() - last >= self.stall_seconds:
                self.stalled = True
                copying.cancel()
                return

    def _progress(self, size: int, asked: float, answered: float) -> None:
        if self.on_progress is not None:
            self.on_progress(size, asked, answered)


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
) -> Iterator[StallWatch]:
    """Watch the copy ``copying`` (a gfal2 context) makes to the URL ``destination()`` gives inside the block
    (stat with the copy's token, which ``authorize`` sets on the watch's own context, every ``look_seconds``
    at most); no watcher when ``stall_seconds`` is 0.
    Only a destination that answers and has not grown counts as no progress: a stat that fails for another
    reason than a missing file never cancels a copy. ``on_progress`` hears the size of each look with the
    ``time.monotonic()`` of its asking and of its answer, between which the size was read (from the
    watcher's thread)."""
    watch = StallWatch(stall_seconds, filesize, on_progress, look_seconds)
    if stall_seconds <= 0:
        yield watch
        return
    thread = threading.Thread(target=watch.run, args=(copying, destination, authorize), daemon=True)
    thread.start()
    try:
        yield watch
    finally:
        watch._stop.set()
        thread.join(timeout=10)
