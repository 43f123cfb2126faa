"""A running copy's pace, from the stall watch's looks at its destination (transfers/tasks.py ``Heartbeat``):
what the heartbeat writes on the file and the push loop's arrival predictions read. Each look is timed
by its asking and its answer; the size was read somewhere between them."""

from __future__ import annotations

import pytest

from transfers.tasks import PACE_SPAN_SECONDS, PACE_WINDOW_SECONDS, Heartbeat

RATE = 8e6  # bytes/s, the fault bench source's pace
QUICK = 0.005  # a look answered in 5 ms


def heartbeat() -> Heartbeat:
    return Heartbeat(attempt_id=1, interval=1.0)  # its thread is never started here


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
