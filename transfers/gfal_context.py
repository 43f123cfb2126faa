"""A gfal2 context that leaves the calling thread's signal mask as it found it.

Debian 12's gfal2 (2.21) loads every plugin it finds when a context is made, and its GridFTP and SRM plugins
(Globus) block nearly every signal in the calling thread and never unblock them (SigBlk fffffffe3ff9ea07:
SIGTERM, SIGINT, SIGHUP, SIGCHLD, SIGALRM, SIGUSR1/2 and the real-time signals; measured 2026-11-28, one
plugin directory at a time). A process that had made one context could no longer be stopped with SIGTERM or
Ctrl-C, nor could any process it started afterwards (a child inherits the mask): Celery pool processes
waited out their stop timeouts, and a test process that ran a copy in-process left its subprocesses
unkillable. The threads gfal2 starts keep the blocked mask (the signals belong to the Python thread)."""

from __future__ import annotations

import os
import signal
from typing import Any

# XrdCl reads these when first used (this module is imported by every user of gfal2 and XrdCl here):
# fail fast on a dead endpoint instead of retrying for minutes.
os.environ.setdefault("XRD_CONNECTIONRETRY", "1")
os.environ.setdefault("XRD_CONNECTIONWINDOW", "5")
os.environ.setdefault("XRD_REQUESTTIMEOUT", "120")
# XrdCl lives as long as the worker process and remembers a host it failed to reach for this long (1800 s by
# default), answering "Connection error" at once meanwhile: a storage server restarted after a crash would be
# unreachable from this worker for half an hour, and every retry in that time would fail. The service's own
# retries are spaced out already (retry_delay, doubling).
os.environ.setdefault("XRD_STREAMERRORWINDOW", "1")


def new_context() -> Any:
    """``gfal2.creat_context()``, with the calling thread's signal mask restored afterwards."""
    import gfal2

    mask = signal.pthread_sigmask(signal.SIG_BLOCK, ())
    try:
        return gfal2.creat_context()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def describe_error(exc: Exception) -> str:
    """A gfal2 error as one line: ``[code name] message``, any token in a quoted URL redacted."""
    from .tokens import redact

    code = getattr(exc, "code", None)
    message = redact(str(getattr(exc, "message", "") or exc).strip())
    name = os.strerror(code) if isinstance(code, int) and code > 0 else ""
    return f"[{code} {name}] {message}" if name else message
