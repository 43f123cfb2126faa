"""Pure rules of the transfer scheduler and the link optimizer."""

from typing import Any

import pytest

from transfers.optimizer import LinkWindow, decide
from transfers.scheduling import most_specific, pick_activity, share_key


def test_activity_slots_follow_the_weights_exactly_over_time():
    weights = {"SKA Data Products": 3.0, "User Subscriptions": 1.0}
    admitted: dict[str, int] = {}
    for _ in range(400):
        chosen = pick_activity(weights, weights, admitted)
        assert chosen is not None
        admitted[chosen] = admitted.get(chosen, 0) + 1
    assert admitted == {"SKA Data Products": 300, "User Subscriptions": 100}


def test_only_present_activities_share_and_unknown_ones_fall_under_default():
    weights = {"a": 5.0, "default": 1.0}
    assert pick_activity({"b"}, weights, {}) == "b"
    assert share_key("b", weights) == "default"
    assert pick_activity({"a", "b"}, {"a": 0.0, "default": 0.0}, {}) is None


def test_most_specific_link_row():
    rows = {("*", "*"): 1, ("s", "*"): 2, ("s", "d"): 3, ("*", "d"): 4}
    assert most_specific("s", "d", rows) == 3
    assert most_specific("s", "x", rows) == 2
    assert most_specific("x", "d", rows) == 4
    assert most_specific("x", "y", rows) == 1
    assert most_specific("x", "y", {}) is None


def window(**kw):
    values: dict[str, Any] = {
        "current": 4,
        "min_active": 1,
        "max_active": 10,
        "mode": 2,
        "throughput_bps": 8e9,
        "success_rate": 100.0,
        "previous_ema_bps": 5e9,
        "queued": 50,
        "active": 4,
    }
    values.update(kw)
    return LinkWindow(**values)


def test_first_sight_starts_half_way():
    assert decide(window(current=None)).active == 5


def test_healthy_rising_link_goes_up_by_the_mode_step():
    assert decide(window(mode=2)).active == 6
    assert decide(window(mode=1)).active == 5


def test_failing_link_goes_down():
    result = decide(window(success_rate=90.0))
    assert result.active == 3 and "success rate" in result.rationale


def test_collapsing_throughput_goes_down_and_falling_holds():
    assert decide(window(throughput_bps=3e9, previous_ema_bps=5e9)).active == 4
    assert decide(window(throughput_bps=1e8, previous_ema_bps=5e9)).active == 3
    assert decide(window(throughput_bps=0.0, previous_ema_bps=5e9)).active == 3


def test_decisions_stay_in_range_and_respect_the_queue():
    assert decide(window(current=10)).active == 10
    assert decide(window(current=1, success_rate=0.0)).active == 1
    assert decide(window(queued=2)).active == 4  # fewer queued than running: hold
    assert decide(window(mode=1, current=3, queued=3)).active == 3  # conservative: not beyond the queue
    assert decide(window(min_active=3, max_active=3)).active == 3


@pytest.mark.parametrize("previous", [0.0, 1e9])
def test_ema_smooths_with_alpha_one_tenth(previous):
    assert decide(window(previous_ema_bps=previous, throughput_bps=2e9)).ema_bps == pytest.approx(
        0.1 * 2e9 + 0.9 * previous
    )
