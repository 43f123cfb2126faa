"""Lanes and their rates (pure): which (source, destination) pairs a policy uses and how fast each sends.

Parallel mode: every lane sends continuously at a rate from two progressive-filling passes, first up to
its demand (its share of the telescope's target rate, split again by the lanes' work in sight so that they
drain together: backlog.py), then, with what is left, up to its cap so a lane
whose path is short of capacity is made up by the others. Slot mode (burst switching): each slot is cut
into sub-slots; in each, a telescope's few furthest-behind lanes send at full rate and the rest wait."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from .allocation import progressive_fill
from .backlog import drain_together
from .policies import DegradeStep, ReplicaPolicy, normalised_shares, routes, without_relays
from .tuning import effective_stream_bps
from .types import Lane, LegRole, LiveState, PlanConfig, PlanMode, Topology, Window


@dataclass
class LaneDemand:
    source: str
    destination: str
    telescopes: set[str]
    demand_bps: float = 0.0
    deferrable: bool = False


RELAY_SHARE = 0.5  # of a relaying telescope's target that goes through its centre


def lane_demands(
    policy: ReplicaPolicy, topology: Topology, config: PlanConfig, relaying: frozenset[str] = frozenset()
) -> dict[tuple[str, str], LaneDemand]:
    demands: dict[tuple[str, str], LaneDemand] = {}
    if not config.relays:
        policy = without_relays(policy)

    def add(source: str, destination: str, telescope: str, rate: float, role: LegRole) -> None:
        d = demands.setdefault((source, destination), LaneDemand(source, destination, set()))
        d.telescopes.add(telescope)
        d.demand_bps += rate
        d.deferrable = d.deferrable or role == LegRole.SECOND

    for tel in sorted(t.name for t in topology.telescopes):
        target = config.target_utilisation * topology.link(topology.telescope(tel).access_link).capacity_bps
        centre = policy.relays.get(tel)
        relayed = RELAY_SHARE if tel in relaying and centre is not None else 0.0
        for site, share in normalised_shares(topology, tel).items():
            for hop in routes(policy, topology, tel, site):
                add(hop.source, hop.destination, tel, share * target * (1 - relayed), hop.role)
            if centre is not None and DegradeStep.RELAY in policy.degrade_order:
                # Lanes the RELAY step uses: while it is off they only get capacity the others leave.
                add(tel, centre, tel, share * target * relayed, LegRole.RELAY)
                if topology.path(centre, site) is not None:
                    add(centre, site, tel, share * target * relayed, LegRole.FORWARD)
    return demands


def constraint_capacities(topology: Topology, state: LiveState, config: PlanConfig) -> dict[str, float]:
    capacity = {
        key: max(0.0, cap - state.link_load_bps.get(link, 0.0))
        for key, (link, cap) in topology.link_constraints().items()
    }
    for site in topology.sites:
        capacity[f"peak:{site.name}"] = site.peak_bps
        for tel in topology.telescopes:
            capacity[f"budget:{tel.name}:{site.name}"] = site.budget_per_telescope_bps
    for tel in topology.telescopes:
        capacity[f"target:{tel.name}"] = (
            config.target_utilisation * topology.link(tel.access_link).capacity_bps
        )
    return capacity


def lane_constraints(topology: Topology, d: LaneDemand) -> list[str]:
    path = topology.path(d.source, d.destination)
    assert path is not None
    uses = [*topology.directed_links(path), f"peak:{d.destination}"]
    if len(d.telescopes) == 1:
        (tel,) = d.telescopes
        uses.append(f"budget:{tel}:{d.destination}")
    if d.source in {t.name for t in topology.telescopes}:
        uses.append(f"target:{d.source}")
    return uses


def build_lanes(
    policy: ReplicaPolicy,
    topology: Topology,
    state: LiveState,
    config: PlanConfig,
    *,
    deferring: bool = False,
    relaying: frozenset[str] = frozenset(),
    work: Mapping[tuple[str, str], float] | None = None,
) -> dict[tuple[str, str], Lane]:
    """Every lane the policy (and its degrade steps) may use, with its planned rate and slot windows.

    ``deferring``: second copies get only what first copies leave; ``relaying``: telescopes that send
    RELAY_SHARE of their target through their distribution centre; ``work``: each lane's bytes in sight
    (``backlog.lane_work``): a telescope with none asks for nothing, and with ``config.drain_together``
    a telescope's lanes share its target by it."""
    demands = [d for _, d in sorted(lane_demands(policy, topology, config, relaying).items())]
    wanted = [d.demand_bps for d in demands]
    if work is not None:
        telescopes = {t.name for t in topology.telescopes}
        wanted = drain_together(demands, work, telescopes, split=config.drain_together)
    capacity = constraint_capacities(topology, state, config)
    uses = [lane_constraints(topology, d) for d in demands]
    caps = []
    for d in demands:
        path = topology.path(d.source, d.destination)
        assert path is not None
        stream = effective_stream_bps(
            state.measurements,
            d.source,
            d.destination,
            window_bytes=topology.window_bytes,
            rtt_ms=topology.path_rtt_ms(path),
            loss_rate=topology.path_loss(path),
            config=config,
        )
        broken = (d.source, d.destination) in state.unavailable_lanes
        caps.append(0.0 if broken else min(config.max_streams * stream, topology.path_capacity_bps(path)))
    # Second copies yield to first copies while the SDP buffer is under pressure.
    first = [0.0 if deferring and d.deferrable else w for d, w in zip(demands, wanted, strict=True)]
    demanded = progressive_fill(first, [min(c, w) for c, w in zip(caps, first, strict=True)], uses, capacity)
    # Spare capacity goes first to lanes out of a telescope (utilisation), then to the others.
    from_telescope = [d.source in {t.name for t in topology.telescopes} for d in demands]
    rates = progressive_fill(
        [c if t else 0.0 for c, t in zip(caps, from_telescope, strict=True)],
        caps,
        uses,
        capacity,
        start=demanded,
    )
    windows: list[tuple[Window, ...]] = [()] * len(demands)
    if config.mode == PlanMode.SLOT:
        steady = [0.0 if t else r for r, t in zip(demanded, from_telescope, strict=True)]
        windows, rates = _slot_windows(topology, demands, uses, caps, rates, steady, capacity, config)
    else:
        rates = progressive_fill(caps, caps, uses, capacity, start=rates)
    lanes = {}
    for d, use, rate, win in zip(demands, uses, rates, windows, strict=True):
        path = topology.path(d.source, d.destination)
        assert path is not None
        lanes[(d.source, d.destination)] = Lane(
            source=d.source,
            destination=d.destination,
            telescope=next(iter(d.telescopes)) if len(d.telescopes) == 1 else None,
            links=path.links,
            rtt_ms=topology.path_rtt_ms(path),
            rate_bps=rate,
            windows=win,
        )
        del use
    return lanes


def _slot_windows(
    topology: Topology,
    demands: list[LaneDemand],
    uses: list[list[str]],
    caps: list[float],
    mean_rates: list[float],
    steady_rates: list[float],
    capacity: dict[str, float],
    config: PlanConfig,
) -> tuple[list[tuple[Window, ...]], list[float]]:
    """Sub-slot schedule: per sub-slot, each telescope's k furthest-behind lanes send at full rate.

    k = ceil(access capacity / largest per-telescope budget): a 100 Gbit/s access link and 20 Gbit/s
    budgets give five lanes at a time, the AENEAS picture of five flows sharing a cable."""
    telescopes = {t.name: t for t in topology.telescopes}
    bursty = [i for i, d in enumerate(demands) if d.source in telescopes]
    k = {}
    for tel, spec in telescopes.items():
        budgets = [
            topology.site(demands[i].destination).budget_per_telescope_bps
            for i in bursty
            if demands[i].source == tel and mean_rates[i] > 0
        ]
        smallest = min((b for b in budgets if b > 0), default=1.0)
        k[tel] = max(1, math.ceil(topology.link(spec.access_link).capacity_bps / smallest - 1e-9))
    sub = config.slot_seconds / config.subslots
    owed = {i: mean_rates[i] * config.slot_seconds for i in bursty}
    per_sub: dict[int, list[float]] = {i: [] for i in bursty}
    base = list(steady_rates)
    for _ in range(config.subslots):
        chosen: list[int] = []
        for tel in sorted(telescopes):
            mine = sorted(
                (i for i in bursty if demands[i].source == tel and owed[i] > 0), key=lambda i: (-owed[i], i)
            )
            chosen.extend(mine[: k[tel]])
        weights = [1.0 if i in chosen else 0.0 for i in range(len(demands))]
        rates = progressive_fill(weights, caps, uses, capacity, start=base)
        for i in bursty:
            given = rates[i] if i in chosen else 0.0
            per_sub[i].append(given)
            owed[i] -= given * sub
    windows: list[tuple[Window, ...]] = [()] * len(demands)
    means = list(steady_rates)
    for i in bursty:
        merged: list[Window] = []
        for j, rate in enumerate(per_sub[i]):
            if rate <= 0:
                continue
            if (
                merged
                and merged[-1].rate_bps == rate
                and math.isclose(merged[-1].offset_s + merged[-1].duration_s, j * sub)
            ):
                merged[-1] = Window(merged[-1].offset_s, merged[-1].duration_s + sub, rate)
            else:
                merged.append(Window(j * sub, sub, rate))
        windows[i] = tuple(merged)
        means[i] = sum(per_sub[i]) / config.subslots
    return windows, means
