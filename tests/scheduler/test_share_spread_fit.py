"""The fit of the simulator's share spread (bench/scheduler/copy_sharing.py ``fitted_spread``): copies made
by the model with a known spread give it back; copies exactly as the model has them give none."""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "scheduler"))
import copy_sharing  # a benchmark script, imported from its folder

RTT_MS = {"UKSRC": 223.0, "AUSRC": 7.5}
EXPONENT, QUEUE, GROWTH = -0.64, 0.80, 1.25


def _copies() -> list[copy_sharing.Copy]:
    """Two lanes' copies, two of each in flight, overlapping on the link for 300 s."""
    found = []
    for site, length in (("UKSRC", 11.0), ("AUSRC", 17.0)):
        for slot in range(2):
            start = 0.5 * slot
            while start < 300.0:
                found.append(copy_sharing.Copy(site, start, start + length, 1.0, 1))
                start += length + 0.3
    return found


def _as_the_model_moves_them(found: list[copy_sharing.Copy], spread: float) -> list[copy_sharing.Copy]:
    """The copies with each one's size what the model carries in its time, its share weight drawn with
    ``spread`` (from a generator of its own, not the fit's)."""
    draws = random.Random(1234)
    lucks = [math.exp(spread * draws.gauss(0.0, 1.0)) for _ in found]
    overhead = float(copy_sharing.COLD_COPIES["leg_overhead_s"])
    carried = copy_sharing.modelled_bytes(found, RTT_MS, EXPONENT, overhead, QUEUE, GROWTH, lucks)
    return [c._replace(size=b) for c, b in zip(found, carried, strict=True)]


def test_copies_with_a_known_spread_give_it_back() -> None:
    found = _as_the_model_moves_them(_copies(), 0.4)
    assert copy_sharing.fitted_spread(found, RTT_MS, EXPONENT, QUEUE, GROWTH) == pytest.approx(0.4, abs=0.1)


def test_copies_exactly_as_the_model_has_them_give_no_spread() -> None:
    found = _as_the_model_moves_them(_copies(), 0.0)
    assert copy_sharing.fitted_spread(found, RTT_MS, EXPONENT, QUEUE, GROWTH) < 0.02
