"""The LP upper bound on what a scenario can push out of each telescope in a run (pure; HiGHS via highspy).

Variables: bytes per lane per LP slot. Constraints, per slot: every directed link's capacity (after the
failure schedule), each SRC's per-telescope budget and peak; over time: a telescope sends no more than has
arrived by the slot's end; a centre forwards, and an SRC re-sends, no more than it has received, and by the
end of the run everything relayed is forwarded and every second copy made. Objective: the bytes that leave
the telescopes. Shares are left free, so no plan that honours them can beat the bound."""

from __future__ import annotations

import bisect
from collections.abc import Sequence

import highspy
import numpy as np

from ..planning.lanes import constraint_capacities, lane_constraints, lane_demands
from ..planning.policies import ReplicaPolicy
from ..planning.types import LiveState, PlanConfig, Product, Topology
from .engine import CapacityChange


def lp_upper_bound(
    topology: Topology,
    policy: ReplicaPolicy,
    products: Sequence[Product],
    *,
    duration_s: float,
    slot_s: float = 900.0,
    changes: Sequence[CapacityChange] = (),
    complete_copies: bool = False,
) -> dict[str, float]:
    """Telescope -> the most bytes any schedule could send over its access link during the run.

    With ``complete_copies`` every relayed product must also be forwarded, and every second copy made,
    before the run ends: the bound for finishing the whole policy within the run."""
    config = PlanConfig(target_utilisation=1.0)
    demands = [d for _, d in sorted(lane_demands(policy, topology, config).items())]
    lanes = [(d, lane_constraints(topology, d)) for d in demands]
    telescopes = sorted(t.name for t in topology.telescopes)
    nslots = round(duration_s / slot_s)
    nl = len(lanes)

    def var(lane: int, slot: int) -> int:
        return lane * nslots + slot

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    inf = highspy.kHighsInf
    cost = [(-1.0 if d.source in telescopes else 0.0) for d, _ in lanes for _ in range(nslots)]
    h.addVars(nl * nslots, np.zeros(nl * nslots), np.full(nl * nslots, inf))
    h.changeColsCost(nl * nslots, np.arange(nl * nslots, dtype=np.int32), np.array(cost))

    def add_row(lower: float, upper: float, idx: list[int], val: list[float]) -> None:
        h.addRow(lower, upper, len(idx), np.array(idx, dtype=np.int32), np.array(val, dtype=float))

    ordered = sorted(changes, key=lambda c: c.time_s)
    for s in range(nslots):
        mid = (s + 0.5) * slot_s
        current = {c.link: c.capacity_bps for c in ordered if c.time_s <= mid}
        capacity = constraint_capacities(topology.with_link_capacity(current), LiveState(), config)
        rows: dict[str, list[int]] = {}
        for i, (_, uses) in enumerate(lanes):
            for c in uses:
                if not c.startswith("target:"):
                    rows.setdefault(c, []).append(i)
        for c, members in rows.items():
            add_row(-inf, capacity[c] * slot_s / 8, [var(i, s) for i in members], [1.0] * len(members))
    arrivals = sorted((p.arrival_s, p.telescope, p.size_bytes) for p in products)
    times = [a[0] for a in arrivals]
    for tel in telescopes:
        out = [i for i, (d, _) in enumerate(lanes) if d.source == tel]
        for s in range(nslots):
            upto = bisect.bisect_right(times, (s + 1) * slot_s)
            arrived = sum(a[2] for a in arrivals[:upto] if a[1] == tel)
            idx = [var(i, k) for i in out for k in range(s + 1)]
            add_row(-inf, arrived, idx, [1.0] * len(idx))
    # Conservation: a centre forwards all it receives; an SRC re-sends (second copy) all it receives as
    # primary, from a telescope or a centre. Cumulative out <= in at every slot (equal at the end when
    # the copies must complete).
    sources = set(telescopes) | {s.name for s in topology.sites if s.is_distribution_centre}
    for site in sorted({d.source for d, _ in lanes if d.source not in telescopes}):
        into = [i for i, (d, _) in enumerate(lanes) if d.destination == site and d.source in sources]
        out = [i for i, (d, _) in enumerate(lanes) if d.source == site]
        for s in range(nslots):
            idx = [var(i, k) for i in out for k in range(s + 1)] + [
                var(i, k) for i in into for k in range(s + 1)
            ]
            val = [1.0] * (len(out) * (s + 1)) + [-1.0] * (len(into) * (s + 1))
            add_row(0.0 if complete_copies and s == nslots - 1 else -inf, 0.0, idx, val)
    h.run()
    values = np.array(h.getSolution().col_value)
    result = {}
    for tel in telescopes:
        out = [i for i, (d, _) in enumerate(lanes) if d.source == tel]
        result[tel] = float(sum(values[var(i, s)] for i in out for s in range(nslots)))
    return result
