"""The firefly collector's journal of ended flows (monitoring/fireflies/journal.py): each flow read once
after a cursor, in order, pages bounded, flows that left the ring counted as missed, and a cursor past the
end (another epoch's) answered with nothing rather than an error."""

from __future__ import annotations

import datetime as dt
import ipaddress

import pytest

from monitoring.fireflies.journal import MAX_READ, FlowJournal
from monitoring.fireflies.ledger import FlowRecord
from monitoring.fireflies.packets import FlowKey

START = dt.datetime(2026, 11, 29, 1, 0, tzinfo=dt.UTC)


def record(port: int) -> FlowRecord:
    return FlowRecord(
        flow=FlowKey("tcp", ipaddress.ip_address("10.0.0.1"), 1094, ipaddress.ip_address("10.0.0.2"), port),
        experiment=42,
        activity=0,
        received_bytes=1,
        sent_bytes=port,
        duration_seconds=2.0,
        rtt_seconds=0.3,
        lane=None,
        start_seen=True,
        start_time=START,
        end_time=START + dt.timedelta(seconds=2),
    )


def test_each_flow_is_read_once_after_the_cursor_in_order() -> None:
    journal = FlowJournal(10)
    for port in (40000, 40001, 40002):
        journal.append(record(port))
    page = journal.read(0)
    assert [f["seq"] for f in page.flows] == [1, 2, 3] and page.next_after == 3 and page.missed == 0
    assert page.flows[0]["sent_bytes"] == 40000 and page.flows[0]["end_time"] == "2026-11-29T01:00:02+00:00"
    assert journal.read(3).flows == [] and journal.read(3).next_after == 3
    journal.append(record(40003))
    assert [f["dst_port"] for f in journal.read(3).flows] == [40003]


def test_pages_are_bounded_and_continue_where_they_stopped() -> None:
    journal = FlowJournal(MAX_READ * 2)
    for port in range(MAX_READ + 10):
        journal.append(record(port))
    first = journal.read(0, limit=10**9)
    assert len(first.flows) == MAX_READ
    second = journal.read(first.next_after, limit=100)
    assert [f["seq"] for f in second.flows] == list(range(MAX_READ + 1, MAX_READ + 11))


def test_flows_that_left_the_ring_are_counted_as_missed() -> None:
    journal = FlowJournal(3)
    for port in range(8):
        journal.append(record(port))
    page = journal.read(2)
    assert [f["seq"] for f in page.flows] == [6, 7, 8] and page.missed == 3
    assert journal.read(8).missed == 0


def test_a_cursor_past_the_end_gets_nothing_and_no_error() -> None:
    journal = FlowJournal(3)
    journal.append(record(1))
    page = journal.read(99)
    assert page.flows == [] and page.missed == 0 and page.next_after == 1


@pytest.mark.parametrize(("after", "limit"), [(-1, 10), (0, 0)])
def test_a_bad_cursor_or_limit_is_refused(after: int, limit: int) -> None:
    with pytest.raises(ValueError):
        FlowJournal(3).read(after, limit)


def test_the_ring_needs_room_for_one() -> None:
    with pytest.raises(ValueError, match="capacity"):
        FlowJournal(0)
