"""The control-plane benchmark's rates by window (bench/control_plane/figures.py): the best 10 s and the
rate of each whole minute, which says whether a rate was sustained."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "control_plane"))

from figures import _best_window, _per_window


def test_each_whole_minute_has_its_rate_and_a_last_part_is_left_out():
    settled = [0.5] * 120 + [61.0] * 60 + [125.0] * 30  # 120 in the first minute, 60 in the second
    assert _per_window(settled, 60.0) == [2.0, 1.0]


def test_a_run_shorter_than_a_minute_has_no_whole_minute():
    assert _per_window([1.0, 2.0, 30.0], 60.0) == []
    assert _per_window([], 60.0) == []


def test_the_best_window_counts_the_densest_span():
    assert _best_window([0.0, 1.0, 2.0, 50.0, 50.5, 51.0, 52.0, 59.0], 10.0) == 0.5
