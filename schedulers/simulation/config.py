"""The simulator's options (pure): what it models of the network and the stack, and the link changes it
plays. engine.py runs them; measured.py holds the figures the platform's own stack was measured with."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..planning.types import PlanConfig

HEADER_BYTES = 52  # IPv4 (20) and TCP (20) with timestamps (12): what an MTU holds beyond the MSS


@dataclass(frozen=True)
class CapacityChange:
    """At ``time_s`` the link's capacity becomes ``capacity_bps`` (0: down)."""

    time_s: float
    link: str
    capacity_bps: float


@dataclass(frozen=True)
class SimConfig:
    duration_s: float = 86400.0
    replan_s: float = 600.0
    bin_s: float = 300.0
    plan: PlanConfig = field(default_factory=PlanConfig)
    changes: tuple[CapacityChange, ...] = ()
    path_efficiency: float = 1.0  # what the real stack achieves of the window/RTT ceiling
    # False: the planner never sees the measurement history (physics only), the baseline the tuning
    # benchmark compares the measurement-corrected model against.
    use_measurements: bool = True
    # How the real stack moves a leg (bench/scheduler/bench_reality.py measures these against the long-haul
    # local network; the defaults are the model as it was). ``paced``: a leg is held to its lane's planned
    # rate; the real push jobs are not paced (the plan's max_rate_bps reaches no transfer), they take what
    # TCP gets. ``cold_every_leg``: every leg opens new TCP connections (a third-party copy is a new pull),
    # so each starts in slow start, not only one on a lane idle for longer than an RTO.
    # ``rtt_fairness``: streams that share a full link get rates in proportion to (1 / RTT) ** rtt_fairness
    # (0: equal per stream; > 0 favours the short path, as CUBIC; < 0 the long one, as BBR).
    # ``leg_overhead_s``: seconds a lane carries nothing for each leg (job submission, the third-party
    # copy's rendezvous, checksums).
    paced: bool = True
    cold_every_leg: bool = False
    rtt_fairness: float = 0.0
    leg_overhead_s: float = 0.0
    leg_setup_rtts: float = 0.0  # and this many round trips of its path (TCP and TLS handshakes, the request)
    # Slow start from this many bytes per stream in the first round trip (Linux: 10 segments), doubling
    # each RTT; 0: the staircase relative to the plateau (flows.py).
    initial_window_bytes: float = 0.0
    # True: a lane moves its legs file by file, each file a copy of its own (new connections, the leg
    # overhead, slow start) with its share of the lane's streams, up to the plan's copies in flight on the
    # lane (Leg.lane_copies), the next legs' files taking each copy slot as it frees, as the push loop runs
    # them through the transfer service's link limit. False: one flow per leg, one leg at a time.
    copies_in_flight: bool = False
    # (source, destination, seconds): each copy on that lane carries nothing for this much longer than
    # the model above says: what the real stack's copies measured beyond it (copy dead time, fitted by
    # bench_reality from the lane's PathMeasurement.copy_dead_s: a 223 ms lane's CUBIC flows leave slow
    # start early and lose to the queue, which the flow model does not know).
    lane_extra_dead_s: tuple[tuple[str, str, float], ...] = ()
    # The network's MTU: a link's capacity counts each packet's IP and TCP headers (HEADER_BYTES), a copy's
    # bytes do not, so a link carries payload at capacity * (mtu - HEADER_BYTES) / mtu (96.5 % at 1500,
    # 99.4 % at 9000), and the telescope's access bytes (``access_bytes``) are counted as the wire's.
    # 0: a link carries payload at its capacity (the model as it was).
    mtu_bytes: int = 0
    # The queue a full link holds: a copy that opens while a link of its path is full meets that link's
    # queueing delay in each of its setup and slow-start round trips; ``standing_queue`` is its factor on
    # the rate-weighted RTT of the flows crossing the link (flows.standing_queues). 0: no queue (the model
    # as it was).
    standing_queue: float = 0.0
    # How a copy takes up a larger share when another on its link ends: at most ``probe_growth`` times
    # its rate per ``probe_rounds`` round trips of its own path (flows.Flow; BBR: 1.25 per 8). 0: at once
    # (the model as it was).
    probe_growth: float = 0.0
    probe_rounds: float = 8.0
    # How far one copy's share departs from the model's: each copy's share weight is multiplied, when it
    # opens, by a factor drawn from a log-normal of median 1 and this sigma (real BBR copies that share a
    # link settle at unequal rates that last them; copy_sharing.py measures the spread of the real copies
    # about the model). Drawn from a generator seeded with ``seed``, so a run is repeatable. 0: every copy
    # has the model's share (the model as it was).
    share_spread: float = 0.0
    seed: int = 0

    @property
    def payload_fraction(self) -> float:
        return (self.mtu_bytes - HEADER_BYTES) / self.mtu_bytes if self.mtu_bytes else 1.0
