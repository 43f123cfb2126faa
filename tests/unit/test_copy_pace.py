"""A running copy's pace, from the stall watch's looks at its destination (transfers/tasks.py ``Heartbeat``):
what the heartbeat writes on the file and the push loop's arrival predictions read. Each look is timed
by its asking and its answer; the size was read somewhere between them."""

from __future__ import annotations

import pytest

from transfers.heartbeats import PACE_SPAN_SECONDS, PACE_WINDOW_MAX_SECONDS, PACE_WINDOW_SECONDS, Heartbeat

RATE = 8e6  # bytes/s, the fault bench source's pace
QUICK = 0.005  # a look answered in 5 ms


def heartbeat() -> Heartbeat:
    return Heartbeat(attempt_id=1, interval=1.0, began=0.0)  # its thread is never started here


def pace_of(beat: Heartbeat) -> float | None:
    assert beat.progress is not None
    return beat.progress[2]


def test_a_copy_has_no_pace_until_its_looks_span_four_seconds_then_the_one_it_keeps() -> None:
    beat = heartbeat()
    for step in range(9):  # a look every half second
        t = 0.5 * step
        beat.saw(int(RATE * t), t, t + QUICK)
        if t + QUICK < PACE_SPAN_SECONDS:
            assert pace_of(beat) is None
    assert pace_of(beat) == pytest.approx(RATE, rel=0.01)


def test_a_look_answered_late_never_raises_the_pace() -> None:
    """The first look asked at 0 s is answered at 3 s with the size it read at once (0 bytes); the copy
    moves 8 MB/s throughout. Timed at its answer the looks would span 4 s for 7 s of bytes (1.75 times the
    pace); timed from its asking they span the 7 s."""
    beat = heartbeat()
    beat.saw(0, 0.0, 3.0)
    beat.saw(int(RATE * 7.0), 7.0, 7.0 + QUICK)
    pace = pace_of(beat)
    assert pace is not None and pace <= RATE
    assert pace == pytest.approx(RATE, rel=0.01)


def test_a_copy_that_crawled_then_recovered_is_paced_by_its_recent_looks() -> None:
    beat = heartbeat()
    size, t = 0, 0.0
    for _ in range(20):  # 10 s at 1 MB/s
        size, t = size + int(0.5e6), t + 0.5
        beat.saw(size, t, t + QUICK)
    for _ in range(2 * int(PACE_WINDOW_SECONDS) + 2):  # then 11 s at 8 MB/s
        size, t = size + int(RATE * 0.5), t + 0.5
        beat.saw(size, t, t + QUICK)
    assert pace_of(beat) == pytest.approx(RATE, rel=0.05)


def bursty_looks(
    beat: Heartbeat, *, burst_mib: int, seconds: float, phase: float
) -> list[tuple[float, float]]:
    """A copy of RATE whose destination grows in bursts of ``burst_mib`` (its writer lands many reads at
    once), looked at every half second from ``phase``; returns (time, pace) after each look with a pace."""
    burst = burst_mib * 1024 * 1024
    period = burst / RATE
    paces = []
    t = phase
    while t < seconds:
        beat.saw(int(t // period) * burst, t, t + QUICK)
        pace = pace_of(beat)
        if pace is not None:
            paces.append((t, pace))
        t += 0.5
    return paces


@pytest.mark.parametrize("burst_mib", [8, 32, 64])
@pytest.mark.parametrize("phase", [0.0, 0.35, 0.7, 1.05, 1.4, 1.75])
def test_a_copy_that_grows_in_bursts_is_paced_at_its_rate_not_at_a_bursts(
    burst_mib: int, phase: float
) -> None:
    """Measured from a look inside a pause to one just after a burst, a span counts a burst's bytes over
    part of its time: with bursts of 64 MiB the pace read 1.68 times the copy's once the window was full (a
    whole run recorded 14.6 MB/s for a copy of 8 MB/s). Between the looks that saw the size grow, it is
    within 5 % once the window is full, whatever the bursts (and never under half); before that, the span
    starts at the copy's beginning, so a first look taken up to 1.75 s after it does not raise the pace
    (it read up to 1.3 times when the span started at that look)."""
    paces = bursty_looks(heartbeat(), burst_mib=burst_mib, seconds=80.0, phase=phase)
    settled = [pace for t, pace in paces if t > 2 * PACE_WINDOW_SECONDS]
    assert settled and max(settled) <= RATE * 1.05 and min(settled) >= RATE * 0.5, (
        max(settled) / RATE,
        min(settled) / RATE,
    )
    assert max(pace for _, pace in paces) <= RATE * 1.05


def test_bytes_that_landed_late_are_counted_from_the_copys_beginning_not_from_its_first_look() -> None:
    """A busy disk held the destination's writer: the first look (2 s into the copy) saw 0 bytes while
    16 MB had been received; then they landed at once and the copy went on at RATE. Counted from that
    look, 4 s of looks held 6 s of bytes (1.5 times the pace; a whole run recorded 18.7 MB/s for a source
    paced at 8 MiB/s). Counted from the copy's beginning they never exceed RATE."""
    beat = heartbeat()
    beat.saw(0, 2.0, 2.0 + QUICK)
    paces = []
    for step in range(1, 17):  # a look every half second until 10 s
        t = 2.0 + 0.5 * step
        beat.saw(int(RATE * t), t, t + QUICK)
        pace = pace_of(beat)
        if pace is not None:
            paces.append(pace)
    assert paces and max(paces) <= RATE
    assert min(paces) >= RATE * 0.95  # the bytes were all there: nothing to understate


def test_a_copy_that_stops_growing_slows_down_and_reads_zero_once_its_looks_are_forgotten() -> None:
    beat = heartbeat()
    size, t = 0, 0.0
    for _ in range(20):  # 10 s at 8 MB/s
        size, t = size + int(RATE * 0.5), t + 0.5
        beat.saw(size, t, t + QUICK)
    moving = pace_of(beat)
    beat.saw(size, t + 2.0, t + 2.0 + QUICK)  # then stuck: a pause longer than its growths were apart
    slowed = pace_of(beat)
    assert moving is not None and slowed is not None and slowed < moving * 0.9
    for step in range(1, 2 * int(PACE_WINDOW_MAX_SECONDS) + 4):
        beat.saw(size, t + 2.0 + 0.5 * step, t + 2.0 + 0.5 * step + QUICK)
    assert pace_of(beat) == 0
