"""What the collector records of the fireflies it accepts, and exports as Prometheus metrics at scrape time.

Memory stays bounded however many packets arrive and from whom: the open flows are an LRU table of at most
``max_open_flows`` entries (the oldest is evicted, and counted, when a new flow would pass the cap); the
label sets are bounded by construction (experiment and activity ids are integers within the SciTags
ranges, states and drop reasons fixed sets) and further capped at ``max_label_sets`` (experiment,
activity) pairs, beyond which new pairs are counted under ``other``; lanes come only from the resolver,
which names the platform's own storage endpoints. Nothing a sender names (host, application) becomes a
label.

Hooks:

- ``resolver(src_ip, dst_ip)`` returns a ``Lane`` (the storage endpoints at both ends, by their names in
  the platform) or None; flows on a lane are also counted per lane.
- ``on_flow_end(record)`` is called with each ended flow (its 5-tuple, ids, bytes, times, lane): the
  collector journals it there (journal.py) for the control plane to match to the copy and rule it served
  (monitoring/network_accounting.py). It runs on the receiving thread, so it must be quick (no database
  there); its exceptions are logged and counted, never raised into the collector."""

from __future__ import annotations

import ipaddress
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from .packets import DROP_REASONS, Firefly, FireflyError, FlowKey, parse_firefly

log = logging.getLogger("srcnet.fireflies")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
OTHER = "other"


@dataclass(frozen=True, order=True)
class Lane:
    """The storage endpoints at a flow's two ends, by their names in the platform."""

    source: str
    destination: str


@dataclass(frozen=True)
class FlowRecord:
    """An ended flow, as ``on_flow_end`` receives it."""

    flow: FlowKey
    experiment: int
    activity: int
    received_bytes: int
    sent_bytes: int
    duration_seconds: float | None
    rtt_seconds: float | None
    lane: Lane | None
    # False when the flow's start was never seen or it had been evicted from the open flows.
    start_seen: bool
    start_time: datetime | None = None  # the flow's, as its sender's clock gave them
    end_time: datetime | None = None


Resolver = Callable[[IPAddress, IPAddress], Lane | None]
FlowSink = Callable[[FlowRecord], None]


@dataclass
class _OpenFlow:
    experiment: int
    activity: int
    lane: Lane | None


class _RateLimitedLog:
    """At most one line per reason per ``interval`` seconds, with the number left out since: a flood of
    bad packets must not become a flood of log lines."""

    def __init__(self, interval: float = 10.0) -> None:
        self.interval = interval
        self._last: dict[str, float] = {}
        self._quiet: dict[str, int] = {}

    def warning(self, reason: str, detail: str) -> None:
        now = time.monotonic()
        if now - self._last.get(reason, -self.interval) < self.interval:
            self._quiet[reason] = self._quiet.get(reason, 0) + 1
            return
        self._last[reason] = now
        quiet = self._quiet.pop(reason, 0)
        more = f" ({quiet} more of this reason since the last line)" if quiet else ""
        log.warning("dropped a packet, %s: %s%s", reason, detail, more)


class FlowLedger(Collector):
    """The fireflies' counts, bytes and open flows; a Prometheus collector of them."""

    def __init__(
        self,
        *,
        max_open_flows: int = 65536,
        max_label_sets: int = 512,
        resolver: Resolver | None = None,
        on_flow_end: FlowSink | None = None,
    ) -> None:
        if max_open_flows < 1 or max_label_sets < 1:
            raise ValueError("max_open_flows and max_label_sets must be at least 1")
        self.max_open_flows = max_open_flows
        self.max_label_sets = max_label_sets
        self.resolver = resolver
        self.on_flow_end = on_flow_end
        self._lock = threading.Lock()
        self._open: OrderedDict[FlowKey, _OpenFlow] = OrderedDict()
        self._label_sets: set[tuple[int, int]] = set()
        self._flows: dict[tuple[str, str, str], int] = {}
        self._bytes: dict[tuple[str, str, str], int] = {}
        self._lane_flows: dict[tuple[str, str], int] = {}
        self._lane_bytes: dict[tuple[str, str, str], int] = {}
        self._dropped = dict.fromkeys(DROP_REASONS, 0)
        self.received = 0
        self.accepted = 0
        self.evicted = 0
        self.label_overflow = 0
        self.hook_errors = 0
        self._drop_log = _RateLimitedLog()

    # -- receiving ------------------------------------------------------------------------------------

    def receive(self, datagram: bytes) -> Firefly | None:
        """Parse, validate and record one datagram; the firefly, or None when it was dropped."""
        try:
            firefly = parse_firefly(datagram)
        except FireflyError as exc:
            with self._lock:
                self.received += 1
                self._dropped[exc.reason] += 1
            self._drop_log.warning(exc.reason, exc.detail)
            return None
        lane = self._lane(firefly)
        record = None
        with self._lock:
            self.received += 1
            self.accepted += 1
            labels = self._labels(firefly.experiment, firefly.activity)
            key = (*labels, firefly.state)
            self._flows[key] = self._flows.get(key, 0) + 1
            if firefly.state == "end":
                record = self._end(firefly, labels, lane)
            else:
                self._touch(firefly, lane)
        if record is not None and self.on_flow_end is not None:
            try:
                self.on_flow_end(record)
            except Exception:
                with self._lock:
                    self.hook_errors += 1
                log.exception("on_flow_end failed for %s", record.flow)
        return firefly

    def _lane(self, firefly: Firefly) -> Lane | None:
        if self.resolver is None:
            return None
        try:
            return self.resolver(firefly.flow.src_ip, firefly.flow.dst_ip)
        except Exception:
            with self._lock:
                self.hook_errors += 1
            log.exception("the lane resolver failed for %s", firefly.flow)
            return None

    def _labels(self, experiment: int, activity: int) -> tuple[str, str]:
        pair = (experiment, activity)
        if pair not in self._label_sets:
            if len(self._label_sets) >= self.max_label_sets:
                self.label_overflow += 1
                return OTHER, OTHER
            self._label_sets.add(pair)
        return str(experiment), str(activity)

    def _touch(self, firefly: Firefly, lane: Lane | None) -> None:
        """A start or ongoing firefly: the flow is open (and now the most recently seen)."""
        key = firefly.flow
        if key in self._open:
            self._open.move_to_end(key)
            return
        if firefly.state == "start" and lane is not None:
            lane_key = (lane.source, lane.destination)
            self._lane_flows[lane_key] = self._lane_flows.get(lane_key, 0) + 1
        self._open[key] = _OpenFlow(firefly.experiment, firefly.activity, lane)
        while len(self._open) > self.max_open_flows:
            self._open.popitem(last=False)
            self.evicted += 1

    def _end(self, firefly: Firefly, labels: tuple[str, str], lane: Lane | None) -> FlowRecord:
        """An end firefly: its usage is the flow's total, counted once, here (ongoing fireflies are not
        added, so an evicted flow's end never counts bytes twice)."""
        opened = self._open.pop(firefly.flow, None)
        received = firefly.received_bytes or 0
        sent = firefly.sent_bytes or 0
        for direction, count in (("received", received), ("sent", sent)):
            key = (*labels, direction)
            self._bytes[key] = self._bytes.get(key, 0) + count
            if lane is not None:
                lane_key = (lane.source, lane.destination, direction)
                self._lane_bytes[lane_key] = self._lane_bytes.get(lane_key, 0) + count
        duration = None
        if firefly.end_time is not None:
            duration = max(0.0, (firefly.end_time - firefly.start_time).total_seconds())
        return FlowRecord(
            flow=firefly.flow,
            experiment=firefly.experiment,
            activity=firefly.activity,
            received_bytes=received,
            sent_bytes=sent,
            duration_seconds=duration,
            rtt_seconds=firefly.rtt_seconds,
            lane=lane,
            start_time=firefly.start_time,
            end_time=firefly.end_time,
            start_seen=opened is not None,
        )

    # -- reading --------------------------------------------------------------------------------------

    @property
    def open_flows(self) -> int:
        with self._lock:
            return len(self._open)

    def dropped(self, reason: str) -> int:
        with self._lock:
            return self._dropped[reason]

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            flows = sorted(self._flows.items())
            byte_counts = sorted(self._bytes.items())
            lane_flows = sorted(self._lane_flows.items())
            lane_bytes = sorted(self._lane_bytes.items())
            dropped = dict(self._dropped)
            figures = (self.received, self.accepted, self.evicted, self.label_overflow, self.hook_errors)
            open_flows = len(self._open)
        received, accepted, evicted, overflow, hook_errors = figures

        yield _labelled(
            "srcnet_firefly_flows",
            "Fireflies accepted, by experiment id, activity id and flow state (start, ongoing, end)",
            ["experiment", "activity", "state"],
            flows,
        )
        yield _labelled(
            "srcnet_firefly_bytes",
            "Bytes of the flows that ended, by experiment id, activity id and direction (received or sent, "
            "seen from the host that sent the firefly)",
            ["experiment", "activity", "direction"],
            byte_counts,
        )
        yield _labelled(
            "srcnet_firefly_lane_flows",
            "Flows started between two of the platform's storage endpoints",
            ["source", "destination"],
            lane_flows,
        )
        yield _labelled(
            "srcnet_firefly_lane_bytes",
            "Bytes of the flows that ended between two of the platform's storage endpoints",
            ["source", "destination", "direction"],
            lane_bytes,
        )
        family = CounterMetricFamily(
            "srcnet_firefly_packets_dropped",
            "Datagrams dropped, by reason (" + ", ".join(DROP_REASONS) + ")",
            labels=["reason"],
        )
        for reason in DROP_REASONS:
            family.add_metric([reason], dropped[reason])
        yield family
        yield CounterMetricFamily(
            "srcnet_firefly_packets_received", "Datagrams received, valid or not", value=received
        )
        yield CounterMetricFamily("srcnet_firefly_packets_accepted", "Valid fireflies", value=accepted)
        yield GaugeMetricFamily(
            "srcnet_firefly_open_flows", "Flows started (or ongoing) and not yet ended", value=open_flows
        )
        yield GaugeMetricFamily(
            "srcnet_firefly_open_flows_capacity",
            "The most open flows kept; beyond it the least recently seen is evicted",
            value=self.max_open_flows,
        )
        yield CounterMetricFamily(
            "srcnet_firefly_open_flows_evicted",
            "Open flows forgotten to keep the table within its capacity",
            value=evicted,
        )
        yield CounterMetricFamily(
            "srcnet_firefly_label_overflow",
            f"Fireflies counted under experiment and activity '{OTHER}': more than the "
            "collector's cap of distinct (experiment, activity) pairs",
            value=overflow,
        )
        yield CounterMetricFamily(
            "srcnet_firefly_hook_errors",
            "Failures of the lane resolver or the flow-end hook",
            value=hook_errors,
        )


def _labelled(
    name: str, documentation: str, labels: list[str], rows: Iterable[tuple[tuple[str, ...], float]]
) -> CounterMetricFamily:
    """A counter family of ``rows`` (label values, count)."""
    family = CounterMetricFamily(name, documentation, labels=labels)
    for values, count in rows:
        family.add_metric(list(values), count)
    return family
