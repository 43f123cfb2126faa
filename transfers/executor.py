"""Running one copy with gfal2 (the only module that imports gfal2).

A third-party copy between two storage endpoints: the destination pulls from the source (XRootD TPC for
root://, HTTP-TPC COPY for davs://); the worker only orchestrates and verifies adler32 at both ends.
"""

from __future__ import annotations

import errno
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from topology.services.storage_urls import HTTP_SCHEMES
from topology.tpc_streams import ROOT_SCHEMES, streams_on_the_wire

from .flow_marks import mark_http_copy, marked_root_urls
from .flow_marks import valid as valid_scitag
from .gfal_context import describe_error, new_context
from .mock_storage import as_copied, is_mock
from .source_checksum import ChecksumNotAnswered, SourceChecksum
from .stall_watch import StallWatch, Watcher, stall_watch
from .submitted_tokens import tokens_for_file
from .tokens import (
    BearerToken,
    CopyTokens,
    RedactTokens,
    TokenError,
    removal_token,
    tokens_for_copy,
    url_with_token,
)
from .xrdcl_streams import streams_from_environment
from .xrootd_tpc import RendezvousCopy, TpcError

MIB = 1024 * 1024
NO_TOKEN = "none"
# gfal2 and XrdCl quote URLs in what they log, and a root:// URL carries its token (CopyAuthorization).
logging.getLogger("gfal2").addFilter(RedactTokens())


@dataclass(frozen=True)
class CopyOutcome:
    """What one copy achieved; ``error`` is empty on success."""

    ok: bool
    seconds: float
    bytes: int = 0
    source_checksum: str = ""
    dest_checksum: str = ""
    error: str = ""
    # False when another attempt cannot do better (the copy was refused outright).
    retryable: bool = True
    # False when the copy failed before it could have written anything at the destination (refused, the
    # source missing or not matching, the destination already there): nothing of ours to clean up.
    dest_touched: bool = True
    # What gfal2's transfer parameters held when the copy started, read back from them (the attempt keeps it).
    parameters: dict[str, Any] = field(default_factory=dict)


class CopySession:
    """What a worker's copies one after another share (transfers/copy_sessions.py): the storage registry,
    read once, one gfal2 context (made once: it loads every plugin) and one stall-watch thread. Each copy
    sets on the context all that it depends on (its credentials, its HTTP headers), so nothing of one copy
    reaches the next. Closed (its watcher's thread stopped) when the session ends."""

    def __init__(self) -> None:
        from topology.services.storage_urls import StorageRegistry

        self.registry = StorageRegistry.load()
        self._context: Any = None
        self.watcher = Watcher()

    @property
    def context(self) -> Any:
        if self._context is None:
            self._context = new_context()
        return self._context

    def __enter__(self) -> CopySession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.watcher.close()


def refusal(*urls: str, registry: Any = None) -> str:
    """Why one of ``urls`` must not be touched (not on a registered, active storage endpoint), or "".

    Submissions are checked when they are stored; this is checked again just before acting, so a row
    that says otherwise (written around the service, or an endpoint retired since) moves nothing. A copy
    session's ``registry`` was read when the session began."""
    from topology.services.storage_urls import StorageRegistry, UnregisteredStorageError

    registry = registry or StorageRegistry.load()
    for url in urls:
        try:
            registry.resolve(url)
        except UnregisteredStorageError as exc:
            return f"REFUSED {exc}"
    return ""


def default_timeout(filesize: int | None) -> int:
    """FTS3's default: 600 s plus 2 s per MiB."""
    return 600 + 2 * math.ceil((filesize or 0) / MIB)


def _checksum_mode(gfal2, mode: str):  # type: ignore[no-untyped-def]
    return {
        "both": gfal2.checksum_mode.both,
        "source": gfal2.checksum_mode.source,
        "target": gfal2.checksum_mode.target,
    }[mode]


def copy_file(
    *,
    source: str,
    destination: str,
    checksum: str = "",
    verify: str = "both",
    overwrite: bool = False,
    timeout: int | None = None,
    filesize: int | None = None,
    tokens: CopyTokens | None = None,
    nostreams: int | None = None,
    buffer_size: int | None = None,
    stall_seconds: float | None = None,
    on_progress: Callable[[int, float, float], None] | None = None,
    scitag: int | None = None,
    attempt: int = 1,
    session: CopySession | None = None,
) -> CopyOutcome:
    """Copy ``source`` to ``destination`` with gfal2 (a root:// to root:// copy by the worker's own XRootD
    rendezvous, xrootd_tpc.py) and verify adler32 as ``verify`` asks.

    ``nostreams`` becomes gfal2's ``nbstreams`` (TCP streams: davix asks the HTTP-TPC destination for them;
    the rendezvous asks an XRootD destination for them) and ``buffer_size`` its ``tcp_buffersize`` (bytes;
    gfal2 passes it to the GridFTP plugin only, so for root:// and davs:// copies it is recorded but has no
    effect). The parameters record
    the streams that carry the data (``streams_on_wire``, topology/tpc_streams.py). ``on_progress`` hears
    the destination's size at each of the stall watch's looks, with the monotonic times of its asking and
    answer (from the watch's thread). ``tokens`` are the copy's own (transfers/tokens.py): each URL gets its
    token, renewed before each step when close to its end; for a third-party copy gfal2 hands the source's
    token to the pulling destination (HTTP-TPC: ``TransferHeaderAuthorization``; root://: the source URL's
    ``authz``). ``scitag`` (the copy's SciTags flow identifier) goes on the wire as the protocol carries it
    (flow_marks.py): ``scitag.flow`` on a root:// source, the ``SciTag`` headers of an HTTP copy. ``attempt``
    is the attempt's number (between mock endpoints, it draws the copy's failure: mock_storage.py).
    ``session``: the copy session this copy is one of (its registry and gfal2 context), else its own."""
    refused = refusal(source, destination, registry=session.registry if session else None)
    if refused:
        return CopyOutcome(ok=False, seconds=0.0, error=refused, retryable=False, dest_touched=False)
    import gfal2

    # Between mock endpoints (registered, so SRCNET_MOCK_STORAGE is on): the catalogue's file, no bytes.
    source, destination = as_copied(
        source,
        destination,
        filesize=filesize,
        checksum=checksum,
        failure_fraction=float(getattr(_settings(), "SRCNET_MOCK_FAILURE_FRACTION", 0.0)),
        attempt=attempt,
    )
    if stall_seconds is None:  # the no-progress timeout (stall_watch.py); SRCNET_TRANSFER_STALL
        stall_seconds = float(_transfer_setting("STALL_SECONDS", 300.0))
    watch: StallWatch | None = None
    auth: CopyAuthorization | None = None

    started = time.monotonic()
    parameters: dict[str, Any] = {}
    source, destination = marked_root_urls(source, destination, scitag)
    try:
        ctx = session.context if session is not None else new_context()
        marked = mark_http_copy(ctx, destination, scitag, reused=session is not None)
        auth = CopyAuthorization(gfal2, tokens, source, destination)
        auth.set_credentials(ctx)
        params = ctx.transfer_parameters()
        params.overwrite = overwrite
        params.create_parent = True
        params.timeout = int(timeout or default_timeout(filesize))
        if nostreams:
            params.nbstreams = int(nostreams)
        if buffer_size:
            params.tcp_buffersize = int(buffer_size)
        algorithm, _, expected = checksum.partition(":")
        scheme = destination.partition("://")[0]
        # A root:// to root:// copy is the worker's own rendezvous (xrootd_tpc.py), not gfal2's, which would
        # run XrdCl's copy job and the requests it makes first (docs/benchmarks/copy-round-trips.md).
        rendezvous = scheme in ROOT_SCHEMES and source.partition("://")[0] in ROOT_SCHEMES
        # Its checksums are compared here after the copy, as are those of any copy with tokens over root://
        # (XrdCl asks a root:// destination for its checksum without the URL's opaque part, so without its
        # token, and is refused) and of an HTTP third-party copy: gfal2 asks the source for its checksum
        # before the copy, on a connection of its own (three round trips before the first byte, docs/
        # benchmarks/copy-round-trips.md), where the executor asks it while the copy runs.
        compare_after = verify != "none" and (auth.root_tokens or rendezvous or scheme in HTTP_SCHEMES)
        if verify != "none" and not compare_after:
            params.set_checksum(
                _checksum_mode(gfal2, verify), "ADLER32", expected.lower() if algorithm else ""
            )
        parameters = _parameters_of(params)
        if valid_scitag(scitag) is not None:
            parameters["scitag"] = scitag
            parameters["scitag_on_wire"] = "http headers" if marked else "root:// scitag.flow"
        if compare_after:
            parameters["checksum_mode"], parameters["checksum_compared"] = verify, "after the copy"
            parameters["checksum_type"] = "ADLER32"
            parameters["checksum_value"] = expected.lower() if algorithm else ""
        # A missing source is reported as that, not as whatever the third-party copy's handshake makes of
        # it. FTS3's url-copy looks at the source before every copy; from a worker far from the source that
        # look is a request across the path on a connection the copy only partly reuses (about one round
        # trip at 300 ms: docs/benchmarks.md, "A copy's round trips before its first byte"). So a copy that
        # knows its size (every copy the platform plans: the catalogue has it) looks only once it failed
        # (source_failure, below); one that does not looks first, for the size its streams are planned on.
        source_size = int(filesize or 0)
        if not source_size:
            try:
                source_size = int(ctx.stat(auth.source()).st_size)
            except gfal2.GError as exc:
                return CopyOutcome(
                    ok=False,
                    seconds=time.monotonic() - started,
                    error=f"SOURCE {describe_error(exc)}",
                    parameters=parameters,
                    dest_touched=False,
                )
        source_sum = ""
        if verify == "source" and algorithm and expected:
            # gfal2 hands a source-only check to XrdCl, which copies a source that does not match the
            # user-defined checksum; FTS3 compares them before the copy, and so does this.
            source_sum = ctx.checksum(auth.source(), "ADLER32")
            if source_sum.lower() != expected.lower():
                return CopyOutcome(
                    ok=False,
                    seconds=time.monotonic() - started,
                    source_checksum=source_sum,
                    error=f"SOURCE checksum mismatch: ADLER32 of the source {source_sum} differs from the "
                    f"user-defined {expected.lower()}",
                    parameters=parameters,
                    dest_touched=False,
                )
        # The destination pulls: its scheme says which third-party copy runs, and with how many streams.
        streams = streams_on_the_wire(scheme, nostreams, source_size)
        if rendezvous:  # the destination is asked for the streams in the rendezvous (tpc.str)
            streams = streams_on_the_wire(scheme, streams_from_environment() or streams)
            parameters["third_party_copy"] = "rendezvous"
        parameters["streams_on_wire"] = streams
        copier = RendezvousCopy() if rendezvous else None
        # The source's checksum, asked while the copy runs (source_checksum.py), so that neither the first
        # byte nor the copy's end waits for it; a mock copy's (no path to hide) is asked after, as before.
        early_sum = (
            SourceChecksum(auth.source, auth.set_credentials)
            if verify in ("both", "source") and not source_sum and not is_mock(source)
            else None
        )
        with stall_watch(
            copier or ctx,
            auth.destination,
            stall_seconds=stall_seconds,
            filesize=filesize or None,
            authorize=auth.set_credentials,
            on_progress=on_progress,
            look_seconds=float(_transfer_setting("PROGRESS_SECONDS", 5.0)),
            watcher=session.watcher if session is not None else None,
        ) as watch:
            auth.set_credentials(ctx)
            dest_sum_wanted = verify in ("both", "target")
            if copier is not None:
                # Its close, the destination's size and checksum are asked together (xrootd_tpc._landing),
                # with the destination's token as it is then (a long copy may outlive the first).
                landed = copier.run(
                    auth.source(),
                    auth.destination(),
                    size=source_size,
                    streams=streams,
                    overwrite=overwrite,
                    timeout=int(params.timeout),
                    landed_at=auth.destination,
                    checksum=dest_sum_wanted,
                )
            else:
                ctx.filecopy(params, auth.source(), auth.destination())
        seconds = time.monotonic() - started
        auth.set_credentials(ctx)  # a long copy may have outlived the tokens it started with
        size = landed.size if copier is not None else ctx.stat(auth.destination()).st_size
        if early_sum is not None:
            source_sum = early_sum.value(timeout=max(30.0, float(params.timeout) - seconds))
        elif verify in ("both", "source") and not source_sum:
            source_sum = ctx.checksum(auth.source(), "ADLER32")
        if copier is not None:
            dest_sum = landed.adler32
        else:
            dest_sum = ctx.checksum(auth.destination(), "ADLER32") if dest_sum_wanted else ""
        mismatch = _mismatch(source_sum, dest_sum, expected if algorithm else "") if compare_after else ""
        if mismatch:
            return CopyOutcome(
                ok=False,
                seconds=seconds,
                bytes=int(size),
                source_checksum=source_sum,
                dest_checksum=dest_sum,
                error=f"CHECKSUM {mismatch}",
                parameters=parameters,
            )
        return CopyOutcome(
            ok=True,
            seconds=seconds,
            bytes=int(size),
            source_checksum=source_sum,
            dest_checksum=dest_sum,
            parameters=parameters,
        )
    except TokenError as exc:
        # Never silently: a copy whose token could not be had or renewed fails saying so.
        return CopyOutcome(
            ok=False, seconds=time.monotonic() - started, error=f"TOKEN {exc}", parameters=parameters
        )
    except (gfal2.GError, TpcError, ChecksumNotAnswered) as exc:
        # EEXIST: the file was there before this copy and is not ours to remove.
        touched = getattr(exc, "code", None) != errno.EEXIST
        stalled = watch is not None and watch.stalled
        # Whether it failed because its source is not there (or cannot be read): a look now. Such a copy
        # wrote nothing at the destination (the pull never got a byte), so nothing there is removed for it:
        # another copy may be writing that file (a multi-source job's next source, tests/integration/
        # test_job_types.py), as when the source was looked at first.
        missing = None if stalled or not touched or auth is None else source_failure(ctx, auth, gfal2)
        if missing is not None:
            return replace(missing, seconds=time.monotonic() - started, parameters=parameters)
        return CopyOutcome(
            ok=False,
            seconds=time.monotonic() - started,
            error=watch.error if stalled and watch is not None else f"TRANSFER {describe_error(exc)}",
            parameters=parameters,
            dest_touched=touched,
        )


def source_failure(ctx: Any, auth: CopyAuthorization, gfal2: Any) -> CopyOutcome | None:
    """The outcome of a copy whose source cannot be looked at (``SOURCE`` and gfal2's reason), or None when
    it can."""
    try:
        auth.set_credentials(ctx)
        ctx.stat(auth.source())
    except gfal2.GError as exc:
        return CopyOutcome(ok=False, seconds=0.0, error=f"SOURCE {describe_error(exc)}", dest_touched=False)
    return None


def copy_with_tokens(*, source: str, destination: str, file: Any = None, **options: Any) -> CopyOutcome:
    """``copy_file`` with the copy's tokens: those submitted with the TransferFile ``file`` (FTS3's per-file
    tokens, transfers/submitted_tokens.py), else least-privilege tokens for this copy from the service's
    issuer (settings.SRCNET_TOKENS; none when no issuer is configured). An issuer that refuses or does not
    answer fails the copy before anything moves, with its reason."""
    session = options.get("session")
    refused = refusal(source, destination, registry=session.registry if session else None)
    if refused:
        return CopyOutcome(ok=False, seconds=0.0, error=refused, retryable=False, dest_touched=False)
    try:
        if file is None:
            tokens = tokens_for_copy(source, destination)
        else:
            tokens = tokens_for_file(file, source, destination)
    except TokenError as exc:
        return CopyOutcome(ok=False, seconds=0.0, error=f"TOKEN {exc}", dest_touched=False)
    return copy_file(source=source, destination=destination, tokens=tokens, **options)


class CopyAuthorization:
    """How a copy presents its tokens (renewed first when close to their end), as each protocol takes them:
    over HTTP, gfal2 credentials for each URL (davix sends the destination's as ``Authorization`` and, for
    the pull, the source's as ``TransferHeaderAuthorization``); over root://, ``authz`` in the URL's opaque
    part (gfal2 2.21's XRootD plugin has no use for its credentials), which XRootD's third-party copy hands
    from the source URL to the pulling site. Without tokens, the URLs as they are and no credential."""

    def __init__(self, gfal2: Any, tokens: CopyTokens | None, source: str, destination: str) -> None:
        self._gfal2, self._tokens = gfal2, tokens
        self._source, self._destination = source, destination

    @property
    def root_tokens(self) -> bool:
        """Whether a token travels in a root:// URL of this copy."""
        roots = [u for u in (self._source, self._destination) if u.partition("://")[0] in ROOT_SCHEMES]
        return self._tokens is not None and bool(roots)

    def source(self) -> str:
        return self._url(self._source, self._tokens.source if self._tokens else None)

    def destination(self) -> str:
        return self._url(self._destination, self._tokens.destination if self._tokens else None)

    @staticmethod
    def _url(url: str, token: BearerToken | None) -> str:
        if token is None or url.partition("://")[0] not in ROOT_SCHEMES:
            return url
        return url_with_token(url, token.current())

    def set_credentials(self, ctx: Any) -> None:
        if self._tokens is None:
            # No issuer configured (storage without token enforcement): davix would try to delegate a grid
            # proxy for an HTTP-TPC pull, which XrdHttpTPC refuses; with a bearer credential set it sends
            # "Credential: none" instead. The placeholder authorizes nothing anywhere.
            ctx.set_opt_string("BEARER", "TOKEN", NO_TOKEN)
            return
        # gfal2 picks the credential whose URL prefix is the longest match: the whole URL is used, so that
        # two files of one site (same host and port) each get their own.
        for url, token in (
            (self._source, self._tokens.source),
            (self._destination, self._tokens.destination),
        ):
            if url.partition("://")[0] not in ROOT_SCHEMES:
                ctx.cred_set(url, ctx.cred_new("BEARER", token.current()))


def _mismatch(source_sum: str, dest_sum: str, expected: str) -> str:
    """Why the checksums of a copy do not agree (as gfal2 would have said), or ""."""
    sums = {"source": source_sum.lower(), "destination": dest_sum.lower(), "user-defined": expected.lower()}
    known = {name: value for name, value in sums.items() if value}
    if len(set(known.values())) > 1:
        return "mismatch: " + ", ".join(f"ADLER32 of the {name} {value}" for name, value in known.items())
    return ""


def _settings() -> Any:
    from django.conf import settings

    return settings


def _transfer_setting(key: str, default: float) -> float:
    return float(getattr(_settings(), "SRCNET_TRANSFERS", {}).get(key, default))


def _parameters_of(params) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """gfal2's transfer parameters as the copy gets them, read back from the object handed to filecopy."""
    mode, algorithm, expected = params.get_checksum()
    return {
        "nbstreams": int(params.nbstreams),
        "tcp_buffersize": int(params.tcp_buffersize),
        "timeout": int(params.timeout),
        "overwrite": bool(params.overwrite),
        "checksum_mode": str(mode),
        "checksum_type": str(algorithm),
        "checksum_value": str(expected),
    }


def remove_file(url: str) -> str:
    """Remove ``url`` if it exists (and is on a registered storage endpoint); says what it did. With an
    issuer configured, it asks for a ``storage.modify`` token on the file's directory, nothing more."""
    refused = refusal(url)
    if refused:
        return refused
    import gfal2

    try:
        token = removal_token(url)
    except TokenError as exc:
        return f"failed: TOKEN {exc}"
    ctx = new_context()
    try:
        if token is not None and url.partition("://")[0] in ROOT_SCHEMES:
            target = url_with_token(url, token.current())
        else:
            target = url
            if token is not None:
                ctx.cred_set(url, ctx.cred_new("BEARER", token.current()))
        ctx.unlink(target)
    except gfal2.GError as exc:
        if getattr(exc, "code", None) == 2:
            return "absent"
        return f"failed: {describe_error(exc)}"
    return "removed"
