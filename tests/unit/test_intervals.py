"""Intervals of time: how long a set of spans covers, each instant once."""

from __future__ import annotations

import pytest

from srcnet.intervals import covered_seconds


def test_overlapping_spans_count_once_and_gaps_not_at_all() -> None:
    # [0, 10] and [5, 15] overlap (15 s together), [20, 30] stands alone, [22, 25] lies inside it.
    assert covered_seconds([(20.0, 30.0), (0.0, 10.0), (5.0, 15.0), (22.0, 25.0)]) == pytest.approx(25.0)


def test_no_spans_cover_nothing() -> None:
    assert covered_seconds([]) == 0.0
