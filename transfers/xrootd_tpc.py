"""An XRootD third-party copy made by the worker itself: the rendezvous XrdCl's copy job makes, without what
it asks first.

XrdCl's ``ThirdPartyCopyJob`` (what gfal2 runs for a root:// to root:// copy) first opens the source with
``tpc.stage=placement`` and closes it, to learn where the file is and how large, then asks each server on a
connection of its own whether it does third-party copies (``kXR_query config``), and once the copy runs it
looks whether it has ended only every 2.5 s. From a worker far from the source that is 9 round trips before
the destination's pull even starts, and 1.25 s after every copy on average (docs/benchmarks/
copy-round-trips.md). The platform knows what those requests learn: its endpoints are registered as XRootD
sites and the catalogue has the file's size. So the worker opens the destination with the rendezvous
(``tpc.key``, ``tpc.src``, ``tpc.lfn``, the streams, the size), syncs it, which starts its pull, and waits
for its answer to a second ``kXR_sync``, which comes when the copy ended (XrdOfsTPCJob::Sync).

The source lets the pull in by one of two things. Without tokens, by the grant the worker makes there first
(opening the file with the same key), which costs a connection, a login and an open across the path when
the worker is far from the source. With tokens, by the copy's token for the source, which the rendezvous
hands the pull in ``tpc.scgi`` as HTTP-TPC hands it in ``TransferHeaderAuthorization``: the platform's pull
program reads the source with it and no grant (xrootd-plugins/src/tpc/SourceUrl.hh), so the worker makes
the grant meanwhile, for a stock pull that waits for it, and the first byte does not wait for it.

Errors are raised as ``TpcError`` with a POSIX ``code`` (XRootD's own table, ``XProtocol::toErrno``), so the
executor words them as it words gfal2's."""

from __future__ import annotations

import errno
import logging
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from .storage_urls import with_opaque, without_opaque

logger = logging.getLogger(__name__)

# XProtocol.hh's XErrorCode -> errno (XProtocol::toErrno), for the codes a copy meets.
_SERVER_ERRNO = {
    3000: errno.EINVAL, 3001: errno.EINVAL, 3002: errno.ENAMETOOLONG, 3003: errno.EDEADLK,
    3004: errno.EBADF, 3005: errno.ENODEV, 3007: errno.EIO, 3008: errno.ENOMEM, 3009: errno.ENOSPC,
    3010: errno.EACCES, 3011: errno.ENOENT, 3012: errno.EFAULT, 3013: errno.ENOTSUP,
    3014: errno.EHOSTUNREACH, 3016: errno.EISDIR, 3017: errno.ECANCELED, 3018: errno.EEXIST,
    3019: errno.EDOM, 3021: errno.EDQUOT, 3024: errno.EUSERS, 3025: errno.EROFS, 3030: errno.EACCES,
    3034: errno.ETIMEDOUT,
}  # fmt: skip
_OPERATION_EXPIRED = 206  # XrdCl's errOperationExpired
# The request that cancels a destination's pull. XrdOfsFile::fctl compares it with strcmp over at least 15
# bytes, so its NUL goes too (XrdCl's Buffer::FromString sends it; the Python binding sends what it is given,
# and without the NUL the server took it for another request and the pull ran on, holding the file open).
_CANCEL_REQUEST = "ofs.tpc cancel\x00"
# How long a cancelled copy waits for the destination's answer: XrdOfsTPCJob::Del answers the pending sync
# as it stops the pull, so this bounds only a destination that stopped answering at all.
_CANCEL_SECONDS = 60
_GRANT_WAIT_AFTER_FAILURE_SECONDS = 5


class TpcError(Exception):
    """A failed step of the copy: ``code`` an errno, ``message`` XRootD's words with the step's."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _error(step: str, status: Any) -> TpcError:
    if status.errno:
        code = _SERVER_ERRNO.get(int(status.errno), errno.EIO)
    elif status.code == _OPERATION_EXPIRED:
        code = errno.ETIMEDOUT
    else:
        code = errno.ECOMM  # could not talk to the server at all
    return TpcError(code, f"{step}: {status.message}")


@dataclass(frozen=True)
class _Ends:
    """What the rendezvous names of each end."""

    source_host: str  # host:port, as the destination's pull connects to it
    source_path: str
    source_scheme: str
    source_cgi: tuple[str, ...]  # the source URL's opaque parameters, name=value, as given
    destination_host: str  # the host the source expects the pull from
    destination_scheme: str

    @classmethod
    def of(cls, source: str, destination: str) -> _Ends:
        src, dst = urlsplit(source), urlsplit(destination)
        host = src.netloc.rpartition("@")[2]
        path = src.path[1:] if src.path.startswith("//") else src.path
        cgi = tuple(p for p in src.query.split("&") if p and not p.startswith("xrdcl."))
        return cls(host, path, src.scheme, cgi, dst.hostname or "", dst.scheme)

    @property
    def source_token(self) -> bool:
        return any(p.startswith("authz=") and len(p) > len("authz=") for p in self.source_cgi)


class _Pending:
    """An answer a request will have (XRootD's asynchronous call), waited for when needed."""

    def __init__(self) -> None:
        self._answered = threading.Event()
        self.status: Any = None
        self.response: Any = None

    def __call__(self, status: Any, response: Any, hosts: Any) -> None:
        self.status, self.response = status, response
        self._answered.set()

    def wait(self, seconds: float) -> bool:
        return self._answered.wait(seconds)


# Files whose close was asked and not waited for, kept until its answer (a File's destructor would wait).
_closing: set[Any] = set()
_closing_lock = threading.Lock()


def _close_unawaited(file: Any, timeout: int) -> None:
    """Close ``file`` without waiting for the answer, which tells the copy nothing (as the plugin's pull
    closes its source): waiting would add a round trip to a copy whose worker is far from that server."""

    def closed(status: Any, response: Any, hosts: Any) -> None:
        with _closing_lock:
            _closing.discard(file)

    with _closing_lock:
        _closing.add(file)
    status = file.close(timeout=timeout, callback=closed)
    if not status.ok:  # not even sent (the file was not open): nothing to wait for
        with _closing_lock:
            _closing.discard(file)


@dataclass(frozen=True)
class Landed:
    """What the destination says of the copied file once it is closed: its size, and its adler32 when asked
    (else empty)."""

    size: int
    adler32: str


def _adler32_of(response: Any) -> str:
    """The hex value of a ``kXR_Qcksum`` answer (``adler32 1a2b3c4d``)."""
    text = response.decode(errors="replace") if isinstance(response, bytes) else str(response or "")
    words = text.replace("\x00", " ").split()
    return words[-1].lower() if len(words) >= 2 and words[0].lower() == "adler32" else ""


def _landing(client: Any, dst: Any, url: str, checksum: bool, step: int) -> Landed:
    """Close the copy at the destination and ask for the file's size and adler32 in the same breath: the
    three requests go out together on the worker's connection to the destination, which answers them in
    order (the close first), so a worker far from the destination waits one round trip for all three, not
    one for each (docs/benchmarks/copy-round-trips.md)."""
    parts = urlsplit(url)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    server = client.FileSystem(f"{parts.scheme}://{parts.netloc}")
    closed, stated, summed = _Pending(), _Pending(), _Pending()
    asked = [(closed, dst.close(timeout=step, callback=closed))]
    asked.append((stated, server.stat(path, timeout=step, callback=stated)))
    if checksum:
        from XRootD.client.flags import QueryCode

        asked.append((summed, server.query(QueryCode.CHECKSUM, path, timeout=step, callback=summed)))
    for pending, sent in asked:
        if not sent.ok:
            raise _error("destination (after the copy)", sent)
        if not pending.wait(step + 5):
            raise TpcError(errno.ETIMEDOUT, f"destination (after the copy): no answer in {step} s")
    for step_name, pending in (("close", closed), ("stat", stated), ("checksum", summed)):
        if pending.status is not None and not pending.status.ok:
            raise _error(f"destination ({step_name})", pending.status)
    adler32 = _adler32_of(summed.response) if checksum else ""
    if checksum and not adler32:
        raise TpcError(errno.EIO, f"destination (checksum): no adler32 in its answer {summed.response!r}")
    return Landed(size=int(stated.response.size), adler32=adler32)


class RendezvousCopy:
    """One copy (``run``), which another thread may ``cancel`` (the stall watch does)."""

    def __init__(self) -> None:
        self._cancelled = threading.Event()

    def cancel(self) -> None:
        self._cancelled.set()

    def run(
        self,
        source: str,
        destination: str,
        *,
        size: int,
        streams: int,
        overwrite: bool,
        timeout: int,
        landed_at: Callable[[], str] | None = None,
        checksum: bool = False,
    ) -> Landed:
        """Copy ``source`` to ``destination`` (root:// URLs with their tokens and marks) by a pull at the
        destination of ``streams`` streams, and say what landed (``Landed``: asked at the URL ``landed_at()``
        gives, the destination's with a live token, and with its adler32 when ``checksum``); TpcError says
        which step failed and why."""
        from XRootD import client
        from XRootD.client.flags import AccessMode, OpenFlags

        ends = _Ends.of(source, destination)
        key = secrets.token_hex(16)
        rendezvous = (
            f"tpc.key={key}&tpc.src={ends.source_host}&tpc.lfn={ends.source_path}&tpc.str={max(1, streams)}"
            f"&tpc.spr={ends.source_scheme}&tpc.tpr={ends.destination_scheme}&tpc.dlgon=0"
            f"&oss.asize={size}&tpc.stage=copy"
        )
        if ends.source_token:
            # The pull gets the source's own CGI, its token among them (XrdOfsTPC puts tpc.scgi in the URL
            # its pull program opens): the plugin's pull reads the source with it, as an HTTP-TPC pull does,
            # and needs no grant (xrootd-plugins/src/tpc/SourceUrl.hh); a stock pull presents both.
            rendezvous += "&tpc.scgi=" + "\t".join(ends.source_cgi)
            destination = without_opaque(destination, "tpc.scgi")  # the source's CGI has its scitag.flow
        flags = OpenFlags.UPDATE | OpenFlags.MAKEPATH | (OpenFlags.DELETE if overwrite else OpenFlags.NEW)
        mode = AccessMode.UR | AccessMode.UW | AccessMode.GR | AccessMode.OR
        step = max(1, min(timeout, 60))
        dst, src = client.File(), client.File()
        keyed = with_opaque(source, f"tpc.key={key}&tpc.dst={ends.destination_host}&tpc.stage=copy")
        granted = _Pending()
        status = src.open(keyed, OpenFlags.READ, timeout=step, callback=granted)
        if not status.ok:
            raise _error("source", status)
        if not ends.source_token:
            # Without a token the pull is let in by the grant alone (the keyed open), which comes first: a
            # pull that reached the source before it was refused (docs/benchmarks/copy-round-trips.md).
            # With a token the grant is made meanwhile, for a stock pull's sake (the source holds a pull
            # that comes first until its grant, XrdOfsTPCAuth::Get); the plugin's pull does not wait for
            # it, so a worker far from the source adds no round trip before the first byte.
            self._granted(granted, step)
        copied = False
        try:
            status, _ = dst.open(with_opaque(destination, rendezvous), flags, mode, timeout=step)
            if not status.ok:
                raise _error("destination", status)
            try:
                status, _ = dst.sync(timeout=step)  # the destination starts its pull
                if not status.ok:
                    raise _error("destination (rendezvous)", status)
                self._wait_for_the_copy(dst, timeout)
            except BaseException:
                status, _ = dst.close(timeout=step)
                if not status.ok:  # said here too: a failed copy's own error is what propagates
                    logger.warning("closing the copy at %s: %s", ends.destination_host, status.message)
                raise
            landed = _landing(client, dst, (landed_at or (lambda: destination))(), checksum, step)
            copied = True
        except TpcError:
            if granted.wait(0) and not granted.status.ok:  # the source's own refusal says more
                raise _error("source", granted.status) from None
            raise
        finally:
            # After a failure the source may be what stalled (a stopped server, a cut path): the failure is
            # not held up for more than a few seconds waiting for the grant's answer.
            if granted.wait(step if copied else _GRANT_WAIT_AFTER_FAILURE_SECONDS) and granted.status.ok:
                _close_unawaited(src, step)
        return landed

    @staticmethod
    def _granted(granted: _Pending, step: int) -> None:
        if not granted.wait(step + 5):
            raise TpcError(errno.ETIMEDOUT, f"source: no answer in {step} s")
        if not granted.status.ok:
            raise _error("source", granted.status)

    def _wait_for_the_copy(self, dst: Any, timeout: int) -> None:
        """The destination answers the second sync when its pull has ended; until then, a cancellation asks
        it to stop the pull (``ofs.tpc cancel``)."""
        ended = _Pending()
        status = dst.sync(timeout=timeout, callback=ended)
        if not status.ok:
            raise _error("destination (copy)", status)
        while not ended.wait(0.2):
            if self._cancelled.is_set():
                self._cancel(dst, ended)
        if not ended.status.ok:
            raise _error("destination (copy)", ended.status)

    def _cancel(self, dst: Any, answered: _Pending) -> None:
        """Stop the destination's pull and wait for its answer to the pending sync, so that the close which
        follows finds no copy running and the file is free for a retry (the destination refuses a second
        writer: "already opened by 1 writer")."""
        status, _ = dst.fcntl(_CANCEL_REQUEST, timeout=_CANCEL_SECONDS)
        if not status.ok and not answered.wait(0):
            raise _error("destination (cancel)", status)
        if not answered.wait(_CANCEL_SECONDS):
            raise TpcError(errno.ETIMEDOUT, f"destination (cancel): no answer in {_CANCEL_SECONDS} s")
        raise TpcError(errno.ECANCELED, "destination (copy): cancelled")
