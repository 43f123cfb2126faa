"""The ended flows the collector keeps for the platform to attribute (``GET /flows``): a ring of at most
``capacity`` records, each with a sequence number, so that a reader that polls ``after`` the last number
it saw gets each flow once, and learns how many it missed when it fell further behind than the ring holds.

The collector stays a small service with no database: the control plane pulls from here and matches each
flow to the copy, lane and rule it served (monitoring/network_accounting.py). ``epoch`` changes when the
collector restarts (its numbers start again), so a reader's cursor from before is not trusted."""

from __future__ import annotations

import secrets
import threading
from collections import deque
from dataclasses import dataclass
from typing import Any

from .ledger import FlowRecord

DEFAULT_CAPACITY = 50_000
MAX_READ = 5_000


@dataclass(frozen=True)
class JournalPage:
    """What one read returns: the records after the cursor (oldest first), the cursor to read after next,
    and how many records after the asked cursor had already left the ring."""

    epoch: str
    flows: list[dict[str, Any]]
    next_after: int
    missed: int


def flow_document(record: FlowRecord, sequence: int) -> dict[str, Any]:
    """A record as JSON: its 5-tuple as the sender gave it, ids, bytes, times."""
    flow = record.flow
    return {
        "seq": sequence,
        "protocol": flow.protocol,
        "src_ip": str(flow.src_ip),
        "src_port": flow.src_port,
        "dst_ip": str(flow.dst_ip),
        "dst_port": flow.dst_port,
        "experiment": record.experiment,
        "activity": record.activity,
        "received_bytes": record.received_bytes,
        "sent_bytes": record.sent_bytes,
        "start_time": record.start_time.isoformat() if record.start_time else None,
        "end_time": record.end_time.isoformat() if record.end_time else None,
        "rtt_seconds": record.rtt_seconds,
        "start_seen": record.start_seen,
    }


class FlowJournal:
    """A bounded, thread-safe ring of ended flows (``append`` is the ledger's ``on_flow_end``)."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 1:
            raise ValueError("the journal's capacity must be at least 1")
        self.capacity = capacity
        self.epoch = secrets.token_hex(8)
        self._lock = threading.Lock()
        self._ring: deque[dict[str, Any]] = deque(maxlen=capacity)
        self._last = 0  # the sequence number of the newest record (0: none yet)

    def append(self, record: FlowRecord) -> None:
        with self._lock:
            self._last += 1
            document = flow_document(record, self._last)
            self._ring.append(document)

    @property
    def last(self) -> int:
        with self._lock:
            return self._last

    def read(self, after: int = 0, limit: int = MAX_READ) -> JournalPage:
        """The records numbered above ``after``, at most ``limit`` (capped at MAX_READ)."""
        if after < 0:
            raise ValueError("after must be 0 or more")
        if limit < 1:
            raise ValueError("limit must be at least 1")
        limit = min(limit, MAX_READ)
        with self._lock:
            if after > self._last:
                # A cursor from another epoch (or invented): nothing after it, and nothing missed.
                return JournalPage(self.epoch, [], self._last, 0)
            oldest = self._ring[0]["seq"] if self._ring else self._last + 1
            start = max(after + 1, oldest)
            missed = start - (after + 1)
            offset = start - oldest
            flows = [self._ring[i] for i in range(offset, min(len(self._ring), offset + limit))]
        next_after = flows[-1]["seq"] if flows else max(after, start - 1)
        return JournalPage(self.epoch, flows, next_after, missed)
