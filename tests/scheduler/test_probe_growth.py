"""How a copy takes up a larger share (flows.Flow.probe_growth, SimConfig.probe_growth): under BBR a flow
held by its share measures that bandwidth and probes for more at most 1.25 times per 8 round trips, so
when another copy on its link ends the link is not full again at once (docs/benchmarks.md, "Dead time
from copies never judged")."""

from __future__ import annotations

import pytest

from schedulers.planning.types import Leg, LegRole
from schedulers.simulation.flows import Flow, share_links
from schedulers.simulation.measured import measured_stack

LINK = {"l": 100e6}
RTT = 0.01  # 8 round trips: 80 ms


def _flow(*, growth: float, ramp_start_s: float | None = None) -> Flow:
    leg = Leg("p", LegRole.PRIMARY, "T", "A", ("l",), 1, 1, 0.0, 0, 0.0, 0.0, 3)
    return Flow(
        leg,
        ("T", "A"),
        ("l",),
        1e12,
        float("inf"),
        1e12,
        RTT,
        ramp_start_s,
        initial_bps=1e6 if ramp_start_s is not None else 0.0,
        probe_growth=growth,
    )


def _rates_after_the_other_ends(growth: float) -> list[float]:
    a, b = _flow(growth=growth), _flow(growth=growth)
    share_links([a, b], LINK, 0.0)
    share_links([a, b], LINK, 0.5)  # held by its share until b ends at 0.5 s
    rates = []
    for now in (0.5, 0.58, 0.66, 0.74, 2.0):
        share_links([a], LINK, now)
        rates.append(a.rate_bps)
    return rates


def test_a_flow_held_by_its_share_grows_by_the_probing_gain_per_cycle_when_the_other_ends() -> None:
    rates = _rates_after_the_other_ends(1.25)
    assert rates == pytest.approx([50e6, 62.5e6, 78.125e6, 97.65625e6, 100e6])
    flow = _flow(growth=1.25)
    share_links([flow, _flow(growth=1.25)], LINK, 0.0)
    share_links([flow], LINK, 0.0)
    assert flow.next_ramp_step(0.0) == pytest.approx(8 * RTT)  # the next step is an event
    # Without probing (CUBIC's model, the defaults) it takes the whole link at once.
    assert _rates_after_the_other_ends(0.0) == pytest.approx([100e6] * 5)


def test_a_flow_in_slow_start_held_by_its_share_leaves_slow_start() -> None:
    starting = _flow(growth=1.25, ramp_start_s=0.0)
    for k in range(8):  # the window doubles each round trip from 1 Mbit/s: 128 Mbit/s after 7
        share_links([starting, _flow(growth=1.25)], LINK, k * RTT)
    assert starting.ramp_start_s is None and starting.rate_bps == pytest.approx(50e6)
    share_links([starting], LINK, 8 * RTT)
    assert starting.rate_bps == pytest.approx(50e6)  # from its share, not its window


def test_the_measured_bbr_stack_probes_and_cubic_takes_its_share_at_once() -> None:
    assert float(measured_stack("bbr")["probe_growth"]) == 1.25
    assert float(measured_stack("bbr")["probe_rounds"]) == 8.0
    assert float(measured_stack("cubic").get("probe_growth", 0.0)) == 0.0
