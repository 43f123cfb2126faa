"""Flow-level simulator (pure): runs the planner's plans over simulated time, faster than real time.

Every ``replan_s`` the planner is called, as in production, with what has not started yet and the live
state (lane occupancy, measurements, placed volume, SDP backlog, degrade level). Lanes then send their
legs in plan order, one product at a time, as soon as the product is at the lane's source (or, with
``copies_in_flight``, file by file, up to the plan's copies in flight on the lane); rates follow flows.py.
Link capacity changes (failures, repairs, upgrades) apply at their time."""

from __future__ import annotations

import bisect
import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..planning import planner
from ..planning.policies import ReplicaPolicy
from ..planning.tuning import stream_ceiling_bps
from ..planning.types import (
    Lane,
    Leg,
    LegRole,
    LiveState,
    Measurement,
    Plan,
    PlanEvent,
    PlanMode,
    Product,
    Topology,
)
from .config import HEADER_BYTES, CapacityChange, SimConfig
from .flows import RTO_FLOOR_S, Flow, share_links, standing_queues

# The options live in config.py; imported from here too.
__all__ = ["HEADER_BYTES", "CapacityChange", "SimConfig", "SimResult", "simulate"]

MEASUREMENTS_KEPT = 500
QUEUEING_LOAD = 0.99  # a link whose flows carry this much of its capacity is full: it holds a queue


@dataclass
class ProductRecord:
    product: Product
    replicas: tuple[str, ...] = ()
    left_sdp_s: float = math.inf
    delivered_s: dict[str, float] = field(default_factory=dict)
    started: bool = False


@dataclass
class SimResult:
    topology: Topology
    config: SimConfig
    records: dict[str, ProductRecord]
    access_bytes: dict[str, list[float]]  # telescope -> bytes sent per bin
    link_bytes: dict[str, float]
    lane_bytes: dict[tuple[str, str], float]
    events: list[PlanEvent]
    plans: int
    sim_events: int
    measurements: list[Measurement] = field(default_factory=list)


class _Task:
    __slots__ = ("dead_s", "done", "files_done", "files_opened", "index", "leg", "opened_s", "upstream")

    def __init__(self, leg: Leg, upstream: _Task | None) -> None:
        self.leg, self.upstream, self.done, self.index = leg, upstream, False, 0
        self.files_opened = self.files_done = 0
        self.opened_s = math.inf
        self.dead_s: list[float] = []  # each finished copy's time beyond its bytes at its planned share


class Simulator:
    """One run; use :func:`simulate`."""

    def __init__(
        self, topology: Topology, policy: ReplicaPolicy, products: Sequence[Product], config: SimConfig
    ):
        self.base, self.policy, self.config = topology, policy, config
        self.products = sorted(products, key=lambda p: (p.arrival_s, p.id))
        self.arrivals = [p.arrival_s for p in self.products]
        self.records = {p.id: ProductRecord(p) for p in self.products}
        self.capacity_now = {lk.name: lk.capacity_bps for lk in topology.links}
        self.changes = sorted(config.changes, key=lambda c: (c.time_s, c.link))
        self.queues: dict[tuple[str, str], list[_Task]] = {}
        self.flows: dict[int, Flow] = {}  # by a serial number: a lane may run several copies at once
        # The flows as last shared, and their links' queues (worked out when a copy opens): a copy opened at
        # the next event meets them, as the queue outlives a flow that has just ended there.
        self._shared: list[Flow] = []
        self._queues: dict[str, float] | None = None
        self._copies_ended = False  # since the last share: _shared still holds the ended copies
        self._luck = random.Random(config.seed)
        self.open_on_lane: dict[tuple[str, str], int] = {}
        self._serial = 0
        self.idle_since: dict[tuple[str, str], float] = {}
        self.lanes: dict[tuple[str, str], Lane] = {}
        self.plan: Plan | None = None
        self.measurements: list[Measurement] = []
        self._extra_dead = {(a, b): s for a, b, s in config.lane_extra_dead_s}
        self.degraded: dict[str, int] = {}
        self.placed: dict[str, float] = {}
        self.telescopes = {t.name for t in topology.telescopes}
        nbins = math.ceil(config.duration_s / config.bin_s)
        self.access_bytes = {t: [0.0] * nbins for t in sorted(self.telescopes)}
        self.link_bytes: dict[str, float] = {}
        self.lane_bytes: dict[tuple[str, str], float] = {}
        self.events: list[PlanEvent] = []
        self.plans = 0
        self._task_of: dict[int, _Task] = {}
        self._dirty: set[tuple[str, str]] = set()
        self._lanes_from: dict[str, list[tuple[str, str]]] = {}
        self.sim_events = 0
        self.topology = topology
        self._refresh_constraints()

    # -- planning -------------------------------------------------------------------------------------
    def _refresh_constraints(self) -> None:
        self.topology = self.base.with_link_capacity(self.capacity_now)
        payload = self.config.payload_fraction
        self.constraint_capacity = {
            k: cap * payload for k, (_, cap) in self.topology.link_constraints().items()
        }

    def _history(self) -> tuple[Measurement, ...]:
        """What the planner may learn from: the recent measurements, or nothing (physics only)."""
        return tuple(self.measurements[-MEASUREMENTS_KEPT:]) if self.config.use_measurements else ()

    def _replan(self, now: float) -> None:
        horizon = now + self.config.replan_s
        upto = bisect.bisect_right(self.arrivals, horizon)
        waiting = [p for p in self.products[:upto] if not self.records[p.id].started]
        waiting_ids = {p.id for p in waiting}
        for key, queue in self.queues.items():
            self.queues[key] = [t for t in queue if t.leg.product_id not in waiting_ids]
        backlog: dict[str, float] = {}
        for rec in self.records.values():
            if rec.started and rec.left_sdp_s == math.inf:
                backlog[rec.product.telescope] = (
                    backlog.get(rec.product.telescope, 0.0) + rec.product.size_bytes
                )
        busy: dict[tuple[str, str], float] = {}
        for flow in self.flows.values():
            # A flow paused between its slot windows is not stuck: estimate it at the lane's mean rate.
            lane = self.lanes.get(flow.lane)
            rate = lane.rate_bps if lane is not None and lane.rate_bps > 0 else flow.rate_bps
            until = now + (flow.remaining_bytes * 8 / rate if rate > 0 else self.config.replan_s)
            busy[flow.lane] = max(busy.get(flow.lane, 0.0), until)
        state = LiveState(
            now_s=now,
            measurements=self._history(),
            running=self._running(now),
            placed_bytes=dict(self.placed),
            sdp_backlog_bytes=backlog,
            lane_busy_until_s=busy,
            lane_backlog_bytes=self._bytes_left(),
            lane_file_bytes=self._file_bytes(),
            degraded_level=dict(self.degraded),
        )
        # Legs of products already out of the SDP that found no lane capacity last time go to the planner
        # again, keeping their place in the dependency chain (the task keeps its upstream).
        stale = [
            t for key in sorted(self.queues) for t in self.queues[key] if not math.isfinite(t.leg.start_s)
        ]
        result = planner.plan(
            waiting, self.topology, self.policy, state, self.config.plan, carry_over=[t.leg for t in stale]
        )
        fresh = len(result.legs) - len(stale)
        for task, leg in zip(stale, result.legs[fresh:], strict=True):
            task.leg = leg
        self.plans += 1
        self.plan = result
        self.lanes = {lane.key: lane for lane in result.lanes}
        self.degraded = dict(result.degraded_level)
        self.events.extend(result.events)
        tasks: list[_Task] = []
        for leg in result.legs[:fresh]:
            upstream = tasks[leg.depends_on] if leg.depends_on is not None else None
            tasks.append(_Task(leg, upstream))
        for task in tasks:
            self.records[task.leg.product_id].replicas = result.replicas[task.leg.product_id]
            self.queues.setdefault((task.leg.source, task.leg.destination), []).append(task)
        self._lanes_from = {}
        for key in self.queues:
            self._lanes_from.setdefault(key[0], []).append(key)
        self._dirty.update(self.queues)
        for queue in self.queues.values():
            queue.sort(key=lambda t: (t.leg.start_s, -t.leg.priority))

    def _queue_delay_s(self, uses: tuple[str, ...], now: float) -> float:
        """The queueing delay a copy opened now meets on a path of these links (SimConfig.standing_queue)."""
        if self.config.standing_queue <= 0:
            return 0.0
        if self._queues is None:
            if self._copies_ended:
                # A copy opened as others end meets the queue of the copies still running: the ended
                # ones' bytes leave the link's queue within its own delay, before the new copy's setup is
                # over (the real runs' copies to the 223 ms SRC started at 12-13 ms of queue at the
                # median, 31-48 ms on average; with the ended copies still on the link it was 140-166 ms).
                self._shared = list(self.flows.values())
                share_links(self._shared, self.constraint_capacity, now)
                self._copies_ended = False
            self._queues = standing_queues(
                self._shared, self.constraint_capacity, self.config.standing_queue, QUEUEING_LOAD
            )
        return sum(self._queues.get(link, 0.0) for link in uses)

    def _running(self, now: float) -> tuple[Measurement, ...]:
        """The copies in flight, each as what it has carried since it opened (LiveState.running), as the
        push loop reports its running transfers' progress."""
        running = []
        for flow in self.flows.values():
            carried = flow.size_bytes - flow.remaining_bytes
            if now > flow.opened_s and carried > 0:
                running.append(
                    Measurement(
                        source=flow.lane[0],
                        destination=flow.lane[1],
                        streams=max(1, flow.leg.streams),
                        throughput_bps=carried * 8 / (now - flow.opened_s),
                        start_s=flow.opened_s,
                        end_s=now,
                    )
                )
        return tuple(running)

    def _bytes_left(self) -> dict[tuple[str, str], float]:
        """Bytes still to copy on each lane of the products already started: their copies' remaining
        bytes and their files not opened yet (as the push loop reckons its copies in flight)."""
        left: dict[tuple[str, str], float] = {}
        for flow in self.flows.values():
            left[flow.lane] = left.get(flow.lane, 0.0) + flow.remaining_bytes
        for key, queue in self.queues.items():
            for task in queue:
                record = self.records[task.leg.product_id]
                if record.started and not task.done:
                    for index in range(task.files_opened, self._files(task.leg)):
                        left[key] = left.get(key, 0.0) + self._copy_bytes(task.leg, index)
        return left

    def _file_bytes(self) -> dict[tuple[str, str], float]:
        """The mean file size of each lane's copies in flight (its open flows)."""
        sizes: dict[tuple[str, str], list[float]] = {}
        for flow in self.flows.values():
            total = sizes.setdefault(flow.lane, [0.0, 0.0])
            total[0] += flow.size_bytes
            total[1] += 1
        return {lane: size / count for lane, (size, count) in sizes.items()}

    # -- lanes and flows ------------------------------------------------------------------------------
    def _window_rate(self, key: tuple[str, str], now: float) -> float:
        lane = self.lanes.get(key)
        if lane is None:
            return 0.0
        if not lane.windows:
            return lane.rate_bps
        phase = now % self.config.plan.slot_seconds
        for w in lane.windows:
            if w.offset_s - 1e-6 <= phase < w.offset_s + w.duration_s - 1e-6:
                return float(w.rate_bps)
        return 0.0

    def _ready(self, task: _Task, now: float) -> bool:
        if not math.isfinite(task.leg.start_s):
            return False
        if task.upstream is not None:
            return task.upstream.done
        return self.records[task.leg.product_id].product.arrival_s <= now + 1e-9

    def _start_flows(self, now: float) -> None:
        # Only lanes whose situation changed since the last look can start anything.
        dirty, self._dirty = self._dirty, set()
        for key in sorted(dirty):
            queue = self.queues.get(key)
            if not queue:
                continue
            pace = self._window_rate(key, now)
            if pace <= 0:
                continue
            while queue and self.open_on_lane.get(key, 0) < self._copies(queue[0].leg):
                ready = next((i for i, task in enumerate(queue[:64]) if self._ready(task, now)), None)
                if ready is None:
                    break
                task = queue[ready]
                self._open(task, key, pace, now)
                if task.files_opened >= self._files(task.leg):
                    queue.pop(ready)

    def _copies(self, leg: Leg) -> int:
        """How many copies the lane runs at once: one flow per leg, or the plan's copies in flight (the
        latest plan's for the lane, as the push loop sets the lane's limit every cycle)."""
        if not self.config.copies_in_flight:
            return 1
        planned = self.plan.lane_copies.get((leg.source, leg.destination)) if self.plan else None
        return max(1, planned if planned is not None else leg.lane_copies)

    def _files(self, leg: Leg) -> int:
        """The copies a leg is moved as: its product's files, or the whole leg as one flow."""
        return max(1, self.records[leg.product_id].product.files) if self.config.copies_in_flight else 1

    def _copy_bytes(self, leg: Leg, index: int) -> float:
        """The bytes of the leg's ``index``-th copy: that file's (the product's share per file when its
        files' sizes are not known; the whole product as one flow without ``copies_in_flight``)."""
        product = self.records[leg.product_id].product
        if self.config.copies_in_flight and product.file_bytes:  # one per file (planning.validate)
            return product.file_bytes[index]
        return product.size_bytes / self._files(leg)

    def _open(self, task: _Task, key: tuple[str, str], pace: float, now: float) -> None:
        leg = task.leg
        copies = self._copies(leg)
        # Each copy has its share of the lane's streams (at least one) and of its pace.
        streams = max(1, math.ceil(leg.streams / copies)) if self.config.copies_in_flight else leg.streams
        connections = streams if self.config.copies_in_flight else max(leg.streams, leg.files)
        path = self.topology.path(*key)
        assert path is not None
        rtt_ms = self.topology.path_rtt_ms(path)
        ceiling = (
            stream_ceiling_bps(
                self.topology.window_bytes, rtt_ms, self.topology.path_loss(path), self.config.plan.mss_bytes
            )
            * self.config.path_efficiency
        )
        rtt = rtt_ms / 1000.0
        uses = self.topology.directed_links(path)
        queue = self._queue_delay_s(uses, now)
        cold = (
            self.config.cold_every_leg
            or self.config.copies_in_flight
            or now - self.idle_since.get(key, -math.inf) > rtt + RTO_FLOOR_S
        )
        rec = self.records[leg.product_id]
        overhead = (
            self.config.leg_overhead_s
            + self.config.leg_setup_rtts * (rtt + queue)
            + self._extra_dead.get(key, 0.0)
        )
        copy_pace = pace / copies
        flow = Flow(
            leg,
            key,
            uses,
            self._copy_bytes(leg, task.files_opened),
            copy_pace if self.config.paced else math.inf,
            streams * ceiling,
            rtt,
            now + overhead if cold else None,
            share_weight=float(streams) * (1.0 / rtt) ** self.config.rtt_fairness * self._share_luck(),
            idle_until_s=now + overhead if overhead > 0 else None,
            # Every connection of the copy starts from the initial window.
            initial_bps=connections * self.config.initial_window_bytes * 8 / (rtt + queue),
            queue_s=queue,
            probe_growth=self.config.probe_growth,
            probe_rounds=self.config.probe_rounds,
        )
        flow.planned_bps = copy_pace
        flow.opened_s = now
        self._serial += 1
        self.flows[self._serial] = flow
        self._task_of[self._serial] = task
        self.open_on_lane[key] = self.open_on_lane.get(key, 0) + 1
        task.files_opened += 1
        if task.files_opened > 1:
            return
        task.opened_s = now
        if leg.source in self.telescopes:
            # The share the planner balances is the SRC that keeps the product, not a relay on the way.
            rec.started = True
            self.placed[rec.replicas[0]] = self.placed.get(rec.replicas[0], 0.0) + rec.product.size_bytes

    def _share_luck(self) -> float:
        """The factor on a new copy's share weight (SimConfig.share_spread): 1 without a spread."""
        spread = self.config.share_spread
        return self._luck.lognormvariate(0.0, spread) if spread > 0 else 1.0

    def _pause_outside_windows(self, now: float) -> None:
        for flow in self.flows.values():
            key = flow.lane
            pace = self._window_rate(key, now) / self._copies(flow.leg)
            if pace <= 0 and flow.pace_bps > 0:
                flow.pace_bps = 0.0
                self.idle_since[key] = now
            elif pace > 0 and flow.pace_bps <= 0:
                flow.pace_bps = pace if self.config.paced else math.inf
                if now - self.idle_since.get(key, -math.inf) > flow.rtt_s + RTO_FLOOR_S:
                    flow.ramp_start_s = now
            elif pace > 0:
                flow.pace_bps = pace if self.config.paced else math.inf

    def _finish(self, serial: int, now: float) -> None:
        flow = self.flows.pop(serial)
        self._credit(flow)
        task = self._task_of.pop(serial)
        key = flow.lane
        self.open_on_lane[key] -= 1
        if not self.open_on_lane[key]:
            self.idle_since[key] = now
        # The lane has room again.
        self._dirty.add(key)
        if flow.planned_bps > 0:  # as the push loop measures a real copy (schedulers/measurements.py)
            task.dead_s.append(max(0.0, now - flow.opened_s - flow.size_bytes * 8 / flow.planned_bps))
        task.files_done += 1
        if task.files_done < self._files(task.leg):
            return
        task.done = True
        # Lanes out of the destination may now have their product.
        self._dirty.update(self._lanes_from.get(key[1], ()))
        leg = flow.leg
        rec = self.records[leg.product_id]
        if leg.source in self.telescopes:
            rec.left_sdp_s = now
        if leg.role != LegRole.RELAY:
            rec.delivered_s[leg.destination] = now
        # One copy at a time: its time sending; several: the leg's time from its first copy's start.
        active = now - task.opened_s if self.config.copies_in_flight else flow.active_s
        if active > 0:
            size = rec.product.size_bytes
            planned = flow.planned_bps * self._copies(leg)
            dead = statistics.fmean(task.dead_s) if task.dead_s else None
            self.measurements.append(
                Measurement(
                    source=leg.source,
                    destination=leg.destination,
                    streams=leg.streams,
                    throughput_bps=size * 8 / active,
                    paced_bps=planned,
                    copy_dead_s=dead,
                    files=leg.files,
                    start_s=now - active,
                    end_s=now,
                )
            )

    # -- accounting -----------------------------------------------------------------------------------
    def _account(self, t0: float, t1: float) -> None:
        dt = t1 - t0
        if dt <= 0:
            return
        access: dict[str, float] = {}
        for flow in self.flows.values():
            if flow.rate_bps <= 0:
                continue
            sent = flow.rate_bps * dt / 8
            flow.remaining_bytes -= sent
            flow.sent_bytes += sent
            flow.active_s += dt
            if flow.leg.source in self.telescopes:
                access[flow.leg.source] = access.get(flow.leg.source, 0.0) + sent
        wire = 1.0 / self.config.payload_fraction  # the headers cross the link too
        for tel, sent in access.items():
            self._add_to_bins(self.access_bytes[tel], t0, t1, sent * wire)

    def _credit(self, flow: Flow) -> None:
        """Add what a flow has sent to its lane and links (at its end, or at the end of the run)."""
        self.lane_bytes[flow.lane] = self.lane_bytes.get(flow.lane, 0.0) + flow.sent_bytes
        for name in flow.leg.links:
            self.link_bytes[name] = self.link_bytes.get(name, 0.0) + flow.sent_bytes
        flow.sent_bytes = 0.0

    def _add_to_bins(self, bins: list[float], t0: float, t1: float, total: float) -> None:
        width = self.config.bin_s
        rate = total / (t1 - t0)
        t = t0
        while t < t1 - 1e-12:
            b = int(t // width)
            edge = min(t1, (b + 1) * width)
            if b < len(bins):
                bins[b] += rate * (edge - t)
            t = edge

    # -- the loop -------------------------------------------------------------------------------------
    def run(self) -> SimResult:
        end = self.config.duration_s
        now = 0.0
        next_replan = 0.0
        change_index = 0
        arrived = 0
        sub = self.config.plan.slot_seconds / self.config.plan.subslots
        slotted = self.config.plan.mode == PlanMode.SLOT
        while now < end:
            while change_index < len(self.changes) and self.changes[change_index].time_s <= now + 1e-9:
                change = self.changes[change_index]
                self.capacity_now[change.link] = change.capacity_bps
                change_index += 1
                self._refresh_constraints()
                self._dirty.update(self.queues)
            if now >= next_replan - 1e-9:
                self._replan(now)
                next_replan = now + self.config.replan_s
            if slotted:
                self._pause_outside_windows(now)
                self._dirty.update(self.queues)
            if arrived < len(self.arrivals) and self.arrivals[arrived] <= now + 1e-9:
                arrived = bisect.bisect_right(self.arrivals, now + 1e-9)
                self._dirty.update(k for k in self.queues if k[0] in self.telescopes)
            self._start_flows(now)
            self._shared = list(self.flows.values())
            share_links(self._shared, self.constraint_capacity, now)
            self._queues, self._copies_ended = None, False
            candidates = [end, next_replan]
            if change_index < len(self.changes):
                candidates.append(self.changes[change_index].time_s)
            nxt = bisect.bisect_right(self.arrivals, now + 1e-9)
            if nxt < len(self.arrivals):
                candidates.append(self.arrivals[nxt])
            if slotted:
                candidates.append((math.floor(now / sub + 1e-9) + 1) * sub)
            for flow in self.flows.values():
                if flow.rate_bps > 0:
                    candidates.append(now + flow.remaining_bytes * 8 / flow.rate_bps)
                candidates.append(flow.next_ramp_step(now))
            t = max(min(candidates), now + 1e-6)
            self._account(now, t)
            now = t
            self.sim_events += 1
            finished = [k for k, f in self.flows.items() if f.remaining_bytes <= 1.0]
            for serial in finished:
                self._finish(serial, now)
            if finished:
                self._copies_ended, self._queues = True, None
        return SimResult(
            self.base,
            self.config,
            self.records,
            self.access_bytes,
            self.link_bytes,
            self.lane_bytes,
            self.events,
            self.plans,
            self.sim_events,
            self.measurements,
        )


def simulate(
    topology: Topology, policy: ReplicaPolicy, products: Sequence[Product], config: SimConfig
) -> SimResult:
    """Run the planner and the flows over ``config.duration_s`` of simulated time."""
    return Simulator(topology, policy, products, config).run()
