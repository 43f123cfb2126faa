"""The stall watch (transfers/stall_watch.py) on real gfal2 copies through its mock plugin: a ``mock://``
copy lasts the ``time`` its destination's query says and is cancelled by ``ctx.cancel()``, and a look at the
destination answers the ``size`` its query says, so a copy whose destination stays short is a stall."""

from __future__ import annotations

import threading
import time

import gfal2
import pytest

from transfers.gfal_context import new_context
from transfers.stall_watch import STALLED, Watcher, stall_watch

SOURCE = "mock://sdp.example.org/srcnet/obs-1/f?size=100"


def destination(seconds: float, size_seen: int) -> str:
    """A destination whose copy lasts ``seconds`` and where every look sees ``size_seen`` bytes."""
    return (
        f"mock://srcnet.example.org/srcnet/obs-1/f?size={size_seen}&size_pre=0&size_post=100&time={seconds}"
    )


def copy(ctx, url: str, **watch):  # type: ignore[no-untyped-def]
    """Copy SOURCE to ``url`` under a stall watch; returns the watch, the copy's error and its seconds."""
    params = ctx.transfer_parameters()
    params.overwrite = True
    started = time.monotonic()
    error = None
    with stall_watch(ctx, lambda: url, filesize=100, **watch) as seen:
        try:
            ctx.filecopy(params, SOURCE, url)
        except gfal2.GError as exc:
            error = exc
    return seen, error, time.monotonic() - started


def test_a_copy_whose_destination_stops_growing_is_cancelled_as_stalled() -> None:
    seen, error, seconds = copy(new_context(), destination(30, size_seen=10), stall_seconds=1.0)
    assert error is not None and seen.stalled, "the copy ran to its end"
    assert seconds < 5, f"cancelled after {seconds:.1f} s, the no-progress timeout is 1 s"
    assert seen.size == 10 and STALLED in seen.error and "10 of 100 bytes" in seen.error


def test_a_copy_whose_bytes_are_all_there_is_not_cancelled_while_it_ends() -> None:
    # Every byte there at the first look: the rest (the destination's checksum) is not a stall.
    seen, error, seconds = copy(new_context(), destination(3, size_seen=100), stall_seconds=1.0)
    assert error is None and not seen.stalled
    assert seconds >= 2.9


def test_a_session_shares_one_watch_thread_and_each_copy_is_watched_from_its_beginning() -> None:
    ctx, watcher = new_context(), Watcher()
    before = threading.active_count()
    try:
        # Short copies one after another: one thread for all of them, none cancelled.
        for _ in range(5):
            seen, error, _ = copy(ctx, destination(0, size_seen=10), stall_seconds=1.0, watcher=watcher)
            assert error is None and not seen.stalled
        assert threading.active_count() == before + 1
        # A copy quiet for less than its timeout is not cancelled, however quiet the copies before it were:
        # each is watched from its own beginning (2 s without progress, looked at every 0.6 s, timeout 3 s).
        seen, error, seconds = copy(ctx, destination(2, size_seen=10), stall_seconds=3.0, watcher=watcher)
        assert error is None and not seen.stalled and seconds >= 1.9
        # Then one that stalls is cancelled by the same thread, and the next copy on the same context runs.
        seen, error, seconds = copy(ctx, destination(30, size_seen=10), stall_seconds=1.0, watcher=watcher)
        assert error is not None and seen.stalled and seconds < 5
        seen, error, _ = copy(ctx, destination(0, size_seen=10), stall_seconds=1.0, watcher=watcher)
        assert error is None and not seen.stalled
        assert threading.active_count() == before + 1
    finally:
        watcher.close()
    assert threading.active_count() == before
    with pytest.raises(RuntimeError, match="closed"):
        copy(ctx, destination(0, size_seen=10), stall_seconds=1.0, watcher=watcher)


def test_no_watch_at_all_when_the_timeout_is_off() -> None:
    before = threading.active_count()
    seen, error, _ = copy(new_context(), destination(2, size_seen=10), stall_seconds=0)
    assert error is None and not seen.stalled
    assert threading.active_count() == before
