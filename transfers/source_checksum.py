"""The source's checksum, asked for while the copy runs.

A copy verified at both ends needs the source's adler32. Asked before the copy (as gfal2 does when it is
given the checksum mode) it delays the first byte by a request across the path, by three round trips when
that request opens a connection of its own (TCP and TLS: docs/benchmarks/copy-round-trips.md); asked after
the copy, it delays the copy's end by as much. The source's bytes do not change while they are copied (a
product's files are written once), so the question is asked when the copy starts, in a thread with a gfal2
context of its own (the copy's is busy copying; a second context costs well under a millisecond once the
plugins are loaded), and its answer is taken after the copy, usually long since there."""

from __future__ import annotations

import errno
import threading
from collections.abc import Callable
from typing import Any

from .gfal_context import new_context


class ChecksumNotAnswered(Exception):
    """The source did not answer the checksum's question in time (``code`` ETIMEDOUT, as gfal2 says it)."""

    code = errno.ETIMEDOUT


class SourceChecksum:
    """``ADLER32`` of the URL ``source()`` gives, asked in a thread (``authorize`` sets the copy's
    credentials on the thread's context); ``value`` waits for it and raises what the asking raised."""

    def __init__(self, source: Callable[[], str], authorize: Callable[[Any], None]) -> None:
        self._source = source
        self._authorize = authorize
        self._value = ""
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._ask, name="source-checksum", daemon=True)
        self._thread.start()

    def _ask(self) -> None:
        try:
            ctx = new_context()
            self._authorize(ctx)
            self._value = str(ctx.checksum(self._source(), "ADLER32"))
        except BaseException as exc:  # handed to the copy's thread, which words it as its own
            self._error = exc

    def value(self, timeout: float) -> str:
        """The source's checksum, waiting at most ``timeout`` seconds more for it."""
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise ChecksumNotAnswered(f"source checksum: no answer within {timeout:.0f} s of the copy's end")
        if self._error is not None:
            raise self._error
        return self._value
