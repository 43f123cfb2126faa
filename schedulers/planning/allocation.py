"""Rate allocation by progressive filling (pure): the planner's lane rates and the simulator's TCP shares.

Every flow i grows at speed ``weight[i]`` until it reaches ``cap[i]`` or one of its constraints (a link,
a budget) is full; then it freezes and the others keep growing. With weight = demand this is a
proportional allocation (each lane gets the same fraction of its demand while capacity lasts); with
weight = streams it is TCP's per-stream max-min fairness."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

_EPS = 1e-9


def progressive_fill(
    weights: Sequence[float],
    caps: Sequence[float],
    uses: Sequence[Sequence[str]],
    capacity: Mapping[str, float],
    start: Sequence[float] | None = None,
) -> list[float]:
    """Rates for each flow; ``uses[i]`` names the constraints flow i counts against.

    ``start`` gives rates already granted (a second filling pass on top of a first); they count against
    the constraints but are not reduced."""
    n = len(weights)
    rate = list(start) if start is not None else [0.0] * n
    residual = dict(capacity)
    for i in range(n):
        for c in uses[i]:
            residual[c] = residual.get(c, 0.0) - rate[i]
    active = {i for i in range(n) if weights[i] > 0 and caps[i] - rate[i] > _EPS}
    # A flow on a constraint that is already full cannot grow.
    for i in list(active):
        if any(residual.get(c, 0.0) <= _EPS for c in uses[i]):
            active.discard(i)
    while active:
        load: dict[str, float] = {}
        for i in active:
            for c in uses[i]:
                load[c] = load.get(c, 0.0) + weights[i]
        step = min((caps[i] - rate[i]) / weights[i] for i in active)
        for c, w in load.items():
            step = min(step, max(residual[c], 0.0) / w)
        for i in active:
            rate[i] += step * weights[i]
        for c, w in load.items():
            residual[c] -= step * w
        full = {c for c in load if residual[c] <= _EPS * max(1.0, capacity[c])}
        active = {
            i
            for i in active
            if caps[i] - rate[i] > _EPS * max(1.0, caps[i]) and not full.intersection(uses[i])
        }
    return rate
