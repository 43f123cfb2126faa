"""TCP flow physics for the simulator (pure): slow start, per-stream ceilings, sharing a link.

A flow is one leg in progress: ``streams`` TCP streams paced to the lane's planned rate. Slow start is a
staircase: for the first SLOW_START_RTTS round trips the flow may send plateau * 2**(k - 10) in round
trip k (the window doubles each RTT), so a flow that starts cold carries about one RTT's worth of
plateau in its first ten RTTs. A connection kept busy keeps its window (net.ipv4.tcp_slow_start_after_idle
= 0 on tuned DTNs); one idle longer than an RTO (RTT + 200 ms) starts over."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from topology.physics import SLOW_START_RTTS

from ..planning.allocation import progressive_fill
from ..planning.types import Leg

RTO_FLOOR_S = 0.2


@dataclass
class Flow:
    leg: Leg
    lane: tuple[str, str]
    uses: tuple[str, ...]
    remaining_bytes: float
    pace_bps: float  # the planner's rate for the lane (or the slot window's)
    plateau_bps: float  # what the streams can carry: streams * per-stream ceiling
    rtt_s: float
    ramp_start_s: float | None  # None once the window is open
    active_s: float = 0.0
    rate_bps: float = 0.0
    sent_bytes: float = 0.0  # not yet credited to the lane and link totals
    planned_bps: float = 0.0  # the pace it was opened with, for its measurement
    opened_s: float = 0.0  # when it was opened: its copy's time, for the measured dead time
    share_weight: float = 0.0  # its weight where a link is short (0: its streams)
    idle_until_s: float | None = None  # a leg's fixed overhead: it sends nothing before then
    # Slow start from an initial window (bit/s in the first round trip, all streams): the rate doubles each
    # RTT until it reaches the plateau. 0: the staircase of SLOW_START_RTTS below the plateau.
    initial_bps: float = 0.0
    # The queueing delay its round trips met when it opened (the standing queue of the full links on its
    # path, engine.SimConfig.standing_queue): its slow start doubles once per rtt_s + queue_s.
    queue_s: float = 0.0
    size_bytes: float = 0.0  # the copy's bytes: remaining_bytes when it opened (the default)
    # How fast it takes up a share that grows (another copy on its link ended): at most ``probe_growth``
    # times its rate per ``probe_rounds`` round trips of its path, from the rate it last had while its
    # share held it (``probe_bps`` since ``probe_s``); a flow held by its share leaves slow start. 0: it
    # takes a larger share at once (the model as it was). BBR probes for bandwidth with a pacing gain of
    # 1.25 in one phase of eight, each phase one minimum RTT (Cardwell et al., "BBR", ACM Queue 2016).
    probe_growth: float = 0.0
    probe_rounds: float = 8.0
    probe_bps: float | None = None
    probe_s: float = 0.0

    def __post_init__(self) -> None:
        if not self.size_bytes:
            self.size_bytes = self.remaining_bytes

    @property
    def round_trip_s(self) -> float:
        return self.rtt_s + self.queue_s

    def ceiling_at(self, now: float) -> float:
        """The most the flow may send now: its pace, its plateau, and where slow start has got to."""
        if self.idle_until_s is not None:
            if now < self.idle_until_s - 1e-9:
                return 0.0
            self.idle_until_s = None
        top = min(self.pace_bps, self.plateau_bps)
        if self.ramp_start_s is None:
            if self.probe_bps is not None:
                return min(top, self.probe_bps * self.probe_growth ** self._probe_steps(now))
            return top
        if now < self.ramp_start_s:
            return 0.0
        k = math.floor((now - self.ramp_start_s) / self.round_trip_s + 1e-9)
        if self.initial_bps > 0:
            window = self.initial_bps * 2.0**k
            if window >= top:
                self.ramp_start_s = None
                return top
            return window
        if k >= SLOW_START_RTTS:
            self.ramp_start_s = None
            return top
        return min(top, self.plateau_bps * 2.0 ** (k - SLOW_START_RTTS))

    def _probe_steps(self, now: float) -> int:
        return math.floor((now - self.probe_s) / (self.probe_rounds * self.rtt_s) + 1e-9)

    def next_ramp_step(self, now: float) -> float:
        if self.idle_until_s is not None and now < self.idle_until_s:
            return self.idle_until_s
        if self.ramp_start_s is None:
            # A step is an event only while the flow sends what its probing allows (after share_links):
            # one its share holds changes with the share, at another event.
            if self.probe_bps is None:
                return math.inf
            probing = self.ceiling_at(now)
            if self.rate_bps >= probing * (1 - 1e-9) and probing < min(self.pace_bps, self.plateau_bps):
                return self.probe_s + (self._probe_steps(now) + 1) * self.probe_rounds * self.rtt_s
            return math.inf
        if now < self.ramp_start_s:
            return self.ramp_start_s
        k = math.floor((now - self.ramp_start_s) / self.round_trip_s + 1e-9)
        return self.ramp_start_s + (k + 1) * self.round_trip_s


def share_links(flows: Sequence[Flow], capacity: Mapping[str, float], now: float) -> None:
    """Set each flow's rate: its ceiling, or its max-min fair share (per stream) where a link is short."""
    caps = [f.ceiling_at(now) for f in flows]
    load: dict[str, float] = {}
    for f, cap in zip(flows, caps, strict=True):
        for c in f.uses:
            load[c] = load.get(c, 0.0) + cap
    if all(load[c] <= capacity.get(c, math.inf) * (1 + 1e-9) for c in load):
        for f, cap in zip(flows, caps, strict=True):
            f.rate_bps = cap
        return
    # A link has lost capacity (failure, change): TCP shares it between streams.
    weights = [f.share_weight or float(f.leg.streams) for f in flows]
    rates = progressive_fill(weights, caps, [f.uses for f in flows], capacity)
    for f, cap, rate in zip(flows, caps, rates, strict=True):
        f.rate_bps = rate
        if f.probe_growth > 0 and 0 < rate < cap * (1 - 1e-9):
            # Held by its share: that is the bandwidth it has measured; it grows from there.
            f.ramp_start_s = None
            f.probe_bps, f.probe_s = rate, now


def standing_queues(
    flows: Sequence[Flow], capacity: Mapping[str, float], factor: float, full: float = 0.99
) -> dict[str, float]:
    """The queueing delay (s) of each link that ``flows``, at their rates, fill to ``full`` of its
    capacity: ``factor`` times the mean round-trip time of the flows crossing it, weighted by their rates
    (a BBR flow keeps up to one bandwidth-delay product of its own path queued: cwnd_gain 2), and no more
    than the longest of them (the link's buffer is taken to hold one BDP of its longest path)."""
    crossing: dict[str, list[Flow]] = {}
    for flow in flows:
        if flow.rate_bps > 0:
            for link in flow.uses:
                crossing.setdefault(link, []).append(flow)
    queues = {}
    for link, on in crossing.items():
        carried = sum(f.rate_bps for f in on)
        if carried >= full * capacity.get(link, math.inf):
            mean_rtt = sum(f.rate_bps * f.rtt_s for f in on) / carried
            queues[link] = min(factor * mean_rtt, max(f.rtt_s for f in on))
    return queues
