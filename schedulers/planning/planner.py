"""The push planner (pure: no Django): products + policy + topology + live state -> a time-slotted plan.

Objectives, in order: meet deadlines, keep each access link near its target, honour shares and budgets,
minimise cost. Budgets and link capacities hold by construction (lane rates come from an allocation that
respects them, and a lane carries one product at a time); the rest is a greedy list schedule:

* products go in order of (arrival, priority, deadline, id);
* the primary SRC is the one furthest below its share (bytes), unless its lane would keep the product
  waiting more than ``max_wait_s`` or past its deadline: then the lane that delivers soonest wins;
* the SDP buffer turns into deadlines (arrival + buffer / daily volume) and into backpressure: when the
  projected backlog passes ``degrade_at`` of the buffer, the next step of the policy's degrade order
  applies (defer second copies, then relay through the distribution centre) and an event says so."""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from .backlog import lane_work
from .contention import mark_link_limited
from .lanes import RELAY_SHARE, build_lanes, normalised_shares
from .policies import DegradeStep, Hop, ReplicaPolicy, replicas_of, routes, without_relays
from .tuning import (
    copies_at_once,
    effective_stream_bps,
    measured_dead_time_s,
    streams_and_files,
    streams_per_copy,
    streams_per_copy_cap,
)
from .types import (
    Lane,
    Leg,
    LegRole,
    LiveState,
    Plan,
    PlanConfig,
    PlanEvent,
    PlanInputError,
    Product,
    Topology,
)
from .validate import validate_all

SECONDS_PER_YEAR = 365 * 86400
MAX_WAIT_S = 600.0  # how long a product may queue behind a lane before another SRC is tried


@dataclass
class _Pressure:
    """Projected SDP occupancy of one telescope as the schedule is built."""

    buffer_bytes: float
    backlog_bytes: float
    level: int
    pending: list[tuple[float, float]]  # heap of (time the product leaves the SDP, size)

    def advance(self, now: float) -> None:
        while self.pending and self.pending[0][0] <= now:
            self.backlog_bytes -= heapq.heappop(self.pending)[1]


class Planner:
    """One planning run; use :func:`plan`."""

    def __init__(
        self,
        topology: Topology,
        policy: ReplicaPolicy,
        state: LiveState,
        config: PlanConfig,
        products: Sequence[Product] = (),
    ) -> None:
        self.topology, self.policy, self.state, self.config = topology, policy, state, config
        order = policy.degrade_order
        levels = state.degraded_level
        deferring = DegradeStep.DEFER_SECOND_COPIES in order and any(
            level > order.index(DegradeStep.DEFER_SECOND_COPIES) for level in levels.values()
        )
        relaying = frozenset(
            t
            for t, level in levels.items()
            if DegradeStep.RELAY in order and level > order.index(DegradeStep.RELAY)
        )
        self.shares = normalised_shares(topology)
        self.telescope_shares = {t.name: normalised_shares(topology, t.name) for t in topology.telescopes}
        # The lanes' work in sight (backlog.py): an idle telescope asks for nothing, and with
        # drain_together a telescope's lanes share its target by it.
        relayed = {t: (policy.relays[t], RELAY_SHARE) for t in relaying if t in policy.relays}
        work = lane_work(products, policy, topology, state, relayed)
        self.lanes = build_lanes(
            policy, topology, state, config, deferring=deferring, relaying=relaying, work=work
        )
        self.placed = {name: float(state.placed_bytes.get(name, 0.0)) for name in self.shares}
        self.placed_total = sum(self.placed.values())
        self.free = {
            key: max(state.now_s, state.lane_busy_until_s.get(key, state.now_s)) for key in self.lanes
        }
        self.legs: list[Leg] = []
        self.events: list[PlanEvent] = []
        self.replicas: dict[str, tuple[str, ...]] = {}
        self._route_cache: dict[tuple[str, str, bool], list[Hop]] = {}
        self.deferred: dict[str, list[tuple[Product, str, str, int, float]]] = {}
        self.cost_per_byte = {key: self._cost_per_byte(lane) for key, lane in self.lanes.items()}
        self.stream_bps = {
            key: effective_stream_bps(
                state.measurements,
                lane.source,
                lane.destination,
                window_bytes=topology.window_bytes,
                rtt_ms=lane.rtt_ms,
                loss_rate=topology.path_loss(topology.path(*key)),  # type: ignore[arg-type]
                config=config,
            )
            for key, lane in self.lanes.items()
        }
        self.dead_s = {key: measured_dead_time_s(state.measurements, *key) for key in self.lanes}
        self.per_copy_cap = {key: streams_per_copy_cap(state.measurements, *key) for key in self.lanes}
        self.pressure = {
            t.name: _Pressure(
                t.sdp_buffer_bytes,
                state.sdp_backlog_bytes.get(t.name, 0.0),
                state.degraded_level.get(t.name, 0),
                [],
            )
            for t in topology.telescopes
        }

    def _cost_per_byte(self, lane: Lane) -> float:
        # A link's yearly OPEX spread over the bytes it could carry in a year: the marginal cost of a byte.
        return sum(
            self.topology.link(n).opex_eur_per_year
            / max(1.0, self.topology.link(n).capacity_bps / 8 * SECONDS_PER_YEAR)
            for n in lane.links
        )

    def _step_active(self, telescope: str, step: DegradeStep) -> bool:
        order = self.policy.degrade_order
        return step in order and self.pressure[telescope].level > order.index(step)

    def _deadline(self, product: Product) -> float:
        if product.deadline_s is not None:
            return product.deadline_s
        tel = self.topology.telescope(product.telescope)
        return product.arrival_s + tel.sdp_buffer_bytes / (tel.daily_volume_bytes / 86400)

    def _routes(self, telescope: str, site: str, relay: bool) -> list[Hop]:
        key = (telescope, site, relay)
        if key not in self._route_cache:
            self._route_cache[key] = routes(self.policy, self.topology, telescope, site, relay=relay)
        return self._route_cache[key]

    def _first_lane(self, telescope: str, site: str, relay: bool) -> tuple[str, str]:
        return self._routes(telescope, site, relay)[0].source_destination()

    def _carries(self, telescope: str, site: str, relay: bool) -> bool:
        """Every leg of the first copy's route (a relay's forward leg too) has a lane with a rate."""
        return all(
            self.lanes[hop.source_destination()].rate_bps > 0
            for hop in self._routes(telescope, site, relay)
            if hop.role != LegRole.SECOND
        )

    def _choose(self, product: Product, ready: float, deadline: float, relay: bool) -> tuple[str, bool]:
        """(primary SRC, through the relay?): the site furthest below its share whose lane starts soon and
        meets the deadline; failing that, the earliest finish, then the cheapest. A product with a
        destination goes there (through the relay only if that lane is the one that meets the rule)."""
        if product.destination is not None:
            return self._choose_among(product, [product.destination], ready, deadline, relay)
        total = self.placed_total + product.size_bytes
        shares = self.telescope_shares[product.telescope]
        ranked = sorted(shares, key=lambda s: (-(shares[s] * total - self.placed[s]), s))
        return self._choose_among(product, ranked, ready, deadline, relay)

    def _choose_among(
        self, product: Product, ranked: list[str], ready: float, deadline: float, relay: bool
    ) -> tuple[str, bool]:
        best: tuple[float, float, str, bool] | None = None
        for site in ranked:
            for via in (False, True) if relay else (False,):
                lane = self.lanes[self._first_lane(product.telescope, site, via)]
                if lane.rate_bps <= 0 or not self._carries(product.telescope, site, via):
                    continue
                start = max(ready, self.free[lane.key])
                finish = start + product.size_bytes * 8 / lane.rate_bps
                if start <= ready + MAX_WAIT_S and finish <= deadline:
                    return site, via
                candidate = (finish, self.cost_per_byte[lane.key], site, via)
                if best is None or candidate < best:
                    best = candidate
        return (best[2], best[3]) if best is not None else (ranked[0], False)

    def _schedule(
        self,
        product: Product,
        role: LegRole,
        source: str,
        destination: str,
        ready: float,
        depends_on: int | None,
        priority: int,
    ) -> Leg:
        lane = self.lanes[(source, destination)]
        if lane.rate_bps > 0 and math.isfinite(ready):
            start = max(ready, self.free[lane.key])
            finish = start + product.size_bytes * 8 / lane.rate_bps
            self.free[lane.key] = finish
            slot = int(start // self.config.slot_seconds)
        else:  # no capacity on this lane (or upstream) now: the next plan, with new rates, schedules it
            start = finish = math.inf
            slot = -1
        file_bytes = product.size_bytes / max(1, product.files)
        streams, copies = self._streams_and_copies(lane, file_bytes, product.files)
        files = min(copies, max(1, product.files))  # this product's part of the lane's copies
        leg = Leg(
            product.id,
            role,
            source,
            destination,
            lane.links,
            streams,
            files,
            start,
            slot,
            finish,
            lane.rate_bps,
            priority,
            depends_on,
            product.size_bytes * self.cost_per_byte[lane.key],
            product.size_bytes,
            lane_files=copies,
        )
        self.legs.append(leg)
        return leg

    def _streams_and_copies(self, lane: Lane, file_bytes: float, product_files: int) -> tuple[int, int]:
        """(streams, copies in flight) of ``lane`` at its planned rate for files of ``file_bytes``."""
        burst = max((w.rate_bps for w in lane.windows), default=lane.rate_bps)
        block = self.topology.site(lane.destination).tpc_block_bytes
        per_copy = streams_per_copy(file_bytes, block, self.config)
        per_copy = min(
            per_copy, self.per_copy_cap[lane.key] or per_copy
        )  # what the lane's copies showed pays
        streams, files = streams_and_files(
            max(burst, 1.0), self.stream_bps[lane.key], product_files, self.config, per_copy
        )
        copies = files
        if self.config.copies_in_flight:
            copies = max(
                files,
                copies_at_once(
                    file_bytes, lane.rtt_ms, max(burst, 1.0), self.config, self.dead_s.get(lane.key)
                ),
                # Streams a product's files cannot run go to more copies at once (the lane's next
                # products' files): many copies beat one stream count on one file (AENEAS).
                min(self.config.max_files, math.ceil(streams / per_copy)),
            )
        return min(streams, copies * per_copy), copies  # the streams the lane's copies run, never more

    def lane_copies(self) -> dict[tuple[str, str], int]:
        """Copies each lane keeps in flight under this plan: the most its legs ask for, or for a lane with
        no leg but copies still in flight, what its rate asks of files the size of theirs (so that the
        transfer service's limit follows the plan when another lane's work ends, with nothing new to
        submit)."""
        out: dict[tuple[str, str], int] = {}
        for leg in self.legs:
            if math.isfinite(leg.start_s):
                key = (leg.source, leg.destination)
                out[key] = max(out.get(key, 0), leg.lane_copies)
        for key, file_bytes in self.state.lane_file_bytes.items():
            lane = self.lanes.get(key)
            if key in out or lane is None or lane.rate_bps <= 0 or file_bytes <= 0:
                continue
            if self.state.lane_backlog_bytes.get(key, 0.0) > 0:
                out[key] = self._streams_and_copies(lane, file_bytes, self.config.max_files)[1]
        return out

    def _update_pressure(self, product: Product, ready: float) -> None:
        p = self.pressure[product.telescope]
        p.advance(ready)
        fill = (p.backlog_bytes + product.size_bytes) / p.buffer_bytes
        if fill >= self.policy.degrade_at and p.level < len(self.policy.degrade_order):
            step = self.policy.degrade_order[p.level]
            p.level += 1
            detail = f"SDP buffer {fill:.0%} full: {step.value}"
            if step == DegradeStep.RELAY and not self.config.relays:
                detail += " not taken (this plan makes no relay legs: Rucio mode)"
            self.events.append(PlanEvent(ready, product.telescope, "degrade", detail))
        elif fill <= self.policy.recover_at and p.level > 0:
            p.level = 0
            self.events.append(
                PlanEvent(
                    ready,
                    product.telescope,
                    "recover",
                    f"SDP buffer {fill:.0%} full: back to the full policy, catching up",
                )
            )
            self._flush_deferred(product.telescope, ready)

    def _flush_deferred(self, telescope: str, now: float) -> None:
        for product, source, destination, depends_on, ready in self.deferred.pop(telescope, []):
            self._schedule(product, LegRole.SECOND, source, destination, max(now, ready), depends_on, 1)

    def place(self, product: Product) -> None:
        ready = max(product.arrival_s, self.state.now_s)
        self._update_pressure(product, ready)
        deadline = self._deadline(product)
        relay = (
            self._step_active(product.telescope, DegradeStep.RELAY)
            and product.telescope in self.policy.relays
        )
        primary, via_relay = self._choose(product, ready, deadline, relay)
        hops = self._routes(product.telescope, primary, via_relay)
        defer = self._step_active(product.telescope, DegradeStep.DEFER_SECOND_COPIES)
        previous: int | None = None
        at = ready
        leaves_sdp = ready
        for hop in hops:
            if hop.role == LegRole.SECOND and defer and previous is not None:
                self.deferred.setdefault(product.telescope, []).append(
                    (product, hop.source, hop.destination, previous, at)
                )
                continue
            leg = self._schedule(
                product, hop.role, hop.source, hop.destination, at, previous, product.priority
            )
            if hop.source == product.telescope:
                leaves_sdp = leg.finish_s
            previous = len(self.legs) - 1
            at = leg.finish_s
        p = self.pressure[product.telescope]
        heapq.heappush(p.pending, (leaves_sdp, product.size_bytes))
        p.backlog_bytes += product.size_bytes
        self.placed[primary] += product.size_bytes
        self.placed_total += product.size_bytes
        self.replicas[product.id] = replicas_of(hops)

    def carry(self, leg: Leg) -> None:
        """Schedule again a leg of an earlier plan whose product has left the SDP but which never got a lane
        (no capacity then); it still waits for its upstream leg, which is outside this plan."""
        if (leg.source, leg.destination) not in self.lanes:
            raise PlanInputError(f"carry_over: no lane from {leg.source} to {leg.destination}")
        # Only size and files matter to scheduling a leg; the telescope field is a placeholder.
        product = Product(leg.product_id, self.topology.telescopes[0].name, leg.size_bytes, files=leg.files)
        ready = leg.start_s if math.isfinite(leg.start_s) else self.state.now_s
        self._schedule(product, leg.role, leg.source, leg.destination, ready, None, leg.priority)

    def finish(self, carry_over: Sequence[Leg] = ()) -> Plan:
        end = max((leg.start_s for leg in self.legs if math.isfinite(leg.start_s)), default=self.state.now_s)
        for telescope in sorted(self.deferred):
            self._flush_deferred(telescope, end)
        for leg in carry_over:
            self.carry(leg)
        return Plan(
            lanes=tuple(self.lanes[k] for k in sorted(self.lanes)),
            legs=tuple(self.legs),
            events=tuple(self.events),
            replicas=self.replicas,
            degraded_level={t: p.level for t, p in self.pressure.items()},
            lane_copies=self.lane_copies(),
        )


def plan(
    products: Sequence[Product],
    topology: Topology,
    policy: ReplicaPolicy,
    state: LiveState | None = None,
    config: PlanConfig | None = None,
    carry_over: Sequence[Leg] = (),
) -> Plan:
    """Plan the push of ``products``; raises :class:`PlanInputError` (a ValueError) on bad input.

    ``carry_over``: legs of earlier plans still to schedule (downstream legs of products already out of
    the SDP that had no lane capacity); they come last in ``Plan.legs``, in the order given."""
    state = state or LiveState()
    config = config or PlanConfig()
    validate_all(products, topology, policy, state, config)
    if not config.relays:
        policy = without_relays(policy)
    # The streams model reads a transfer that ran on a full link as its share's, not its streams' limit.
    state = replace(state, measurements=mark_link_limited(state.measurements, topology, state.running))
    planner = Planner(topology, policy, state, config, products)
    for product in sorted(products, key=lambda p: (p.arrival_s, -p.priority, planner._deadline(p), p.id)):
        planner.place(product)
    return planner.finish(carry_over)
