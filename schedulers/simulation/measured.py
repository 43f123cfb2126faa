"""How the platform's own stack moves a copy, as measured on the long-haul local network: the simulator's
options (engine.SimConfig) that simulated campaigns run with (schedulers/simulations.py), by the sites'
congestion control. Where each figure comes from: docs/benchmarks.md, and bench/scheduler/."""

from __future__ import annotations

# How the platform's own stack moves a leg, as measured on the long-haul local network (bench_reality.py,
# docs/benchmarks.md): unpaced copies, each cold (new connections, then slow start from 10 segments), and
# the plan's copies in flight per lane. What a copy costs besides its bytes and slow start, measured on
# idle lanes with 1 MiB files (docs/benchmarks.md, "What a copy costs besides its bytes"): 0.56 s a copy
# at 7.5 ms and 3.07 s at 223 ms, p10-p90 within 0.16 s, i.e. 0.42 s and 5.8 round trips of its path
# (the service's dispatch, the third-party copy's request and the pull's TCP and TLS handshakes, the
# checksums; it was 0.2 s and 4 round trips, an estimate). Simulated campaigns run with it
# (``measured_stack``); the scenarios and the unit tests keep the defaults.
COLD_COPIES: dict[str, float | bool] = {
    "paced": False,
    "cold_every_leg": True,
    "initial_window_bytes": 10 * 1448.0,
    "leg_overhead_s": 0.42,
    "leg_setup_rtts": 5.8,
    "copies_in_flight": True,
}

# What depends on the sites' congestion control: how a full link is shared between a 7.5 ms and a 223 ms
# path. BBR, as the dtn_tuning role deploys it: bench/scheduler/copy_sharing.py over the copies of the
# real runs since each admitted copy has a worker process (srcnet/workers.py; docs/benchmarks.md,
# "Copies waiting for a worker process"), each opened as COLD_COPIES says and taking up a larger share as
# BBR probes (``probe_growth`` below): -0.69, -0.65 and -0.59 (600 s), -0.58, -0.60 and -0.66 (150 s),
# -0.64 weighted by their copies: the long path's copies get 8.8 times the short path's per stream, as a
# BBR flow keeps two of its own path's bandwidth-delay products in flight (long-lived flows go further:
# about 90 % of the link to the 223 ms path, bench/scheduler/path_sharing.py). Its standing queue: 0.80
# of the rate-weighted RTT of the flows on a full link (0.74-0.87 in those six runs). ``probe_growth``: a
# copy takes up a share another copy left at most 1.25 times faster per 8 round trips of its own path,
# BBR's bandwidth probing (its design constants, not fitted); without it the simulator's link was full
# where the real one idled 1.5-3 % of the time while both SRCs had products waiting (docs/benchmarks.md,
# "Dead time from copies never judged"). The runs before the worker fix had at most 4 copies running
# whatever the plan asked, which the figures then (-0.30 and 0.70) absorbed. ``share_spread``: how far
# one real copy's share lies from the model's, beyond what its lane's level and the copies in flight
# explain (copy_sharing.py --share-spread, the sigma of a log-normal factor on each copy's share weight
# that spreads the modelled copies as much as the real ones): 0.51, 0.36, 0.34, 0.32, 0.29 (600 s), 0.13,
# 0.23, 0.19, 0.16, 0.27 (150 s), 0.28 their mean, each run one weight (a run's copies share its network's
# state, so they are not independent draws; weighted by copies, 0.33). Without it every copy of a lane
# took the same time at the same load and the simulator's products finished within a narrower spread than
# the real ones (docs/benchmarks.md, "Copies' luck"). CUBIC: the lanes' job rates
# fitted by bench_reality before that fix (the short path gets 2.6 times the long one's per stream); not
# measured since, and no standing queue or probing measured.
BY_CONGESTION_CONTROL: dict[str, dict[str, float]] = {
    "cubic": {"rtt_fairness": 0.28},
    "bbr": {
        "rtt_fairness": -0.64,
        "standing_queue": 0.80,
        "probe_growth": 1.25,
        "probe_rounds": 8.0,
        "share_spread": 0.28,
    },
}
DEPLOYED_CONGESTION_CONTROL = "bbr"  # ansible/roles/dtn_tuning: dtn_tuning_congestion_control


def measured_stack(congestion_control: str = DEPLOYED_CONGESTION_CONTROL) -> dict[str, float | bool]:
    """The SimConfig options of the platform's stack on sites running ``congestion_control``; an unknown
    one is a ValueError naming those known."""
    try:
        return {**COLD_COPIES, **BY_CONGESTION_CONTROL[congestion_control]}
    except KeyError:
        known = ", ".join(BY_CONGESTION_CONTROL)
        raise ValueError(f"unknown congestion control {congestion_control!r} (known: {known})") from None
