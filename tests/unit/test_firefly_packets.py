"""The firefly parser (monitoring/fireflies/packets.py): the senders' shapes are read, every check of the
firefly schema refuses what it must, with the reason the collector counts."""

from __future__ import annotations

import copy
import ipaddress
from datetime import UTC, datetime
from typing import Any

import pytest

from monitoring.fireflies.packets import MAX_DATAGRAM_BYTES, FireflyError, parse_firefly, split_syslog
from tests.fireflies import datagram, firefly


@pytest.mark.parametrize("header", ["xrootd", "flowd-go", "none"])
def test_an_end_firefly_is_read_whatever_the_header(header: str) -> None:
    packet = datagram(firefly("end", received=123, sent=4567, rtt=0.3), header=header)
    parsed = parse_firefly(packet)
    assert parsed.state == "end"
    assert (parsed.experiment, parsed.activity, parsed.flow_identifier) == (20, 3, 20 << 6 | 3)
    assert parsed.flow.src_ip == ipaddress.ip_address("10.0.0.1")
    assert (parsed.flow.src_port, parsed.flow.dst_port, parsed.flow.protocol) == (1094, 40000, "tcp")
    assert (parsed.received_bytes, parsed.sent_bytes, parsed.rtt_seconds) == (123, 4567, 0.3)
    assert parsed.start_time == datetime(2026, 11, 29, 1, 0, tzinfo=UTC)
    assert parsed.end_time is not None and (parsed.end_time - parsed.start_time).total_seconds() == 42.5
    expected = {"xrootd": "xrootd", "flowd-go": "flowd-go", "none": None}[header]
    assert parsed.sender_app == expected


def test_ipv6_flows_and_optional_sections() -> None:
    document = firefly("start", src="fd00:10::1", dst="::ffff:10.1.2.3", received=None, sent=None, rtt=None)
    del document["context"]["application"]
    parsed = parse_firefly(datagram(document))
    assert parsed.flow.dst_ip == ipaddress.IPv6Address("::ffff:10.1.2.3")
    assert (parsed.received_bytes, parsed.sent_bytes, parsed.rtt_seconds, parsed.application) == (
        None,
        None,
        None,
        None,
    )


def test_structured_data_with_escapes_and_a_byte_order_mark() -> None:
    text = '<134>1 - h app - firefly-json [a@1 x="say \\"]\\" here"][b@2] \ufeff{"k":1}'
    assert split_syslog(text) == ('{"k":1}', "h", "app")


def test_a_time_without_offset_is_read_as_utc() -> None:
    document = firefly("start")
    document["flow-lifecycle"]["start-time"] = "2026-11-29T01:00:00"
    assert parse_firefly(datagram(document)).start_time.tzinfo is UTC


def _broken(change: Any) -> bytes:
    document = copy.deepcopy(firefly("end", received=1, sent=2))
    change(document)
    return datagram(document)


def _set(path: str, value: Any):  # type: ignore[no-untyped-def]
    *parents, last = path.split("/")

    def change(document: dict[str, Any]) -> None:
        for name in parents:
            document = document[name]
        document[last] = value

    return change


def _delete(path: str):  # type: ignore[no-untyped-def]
    *parents, last = path.split("/")

    def change(document: dict[str, Any]) -> None:
        for name in parents:
            document = document[name]
        del document[last]

    return change


BAD = {
    "oversized": [b"{" + b" " * MAX_DATAGRAM_BYTES + b"}"],
    "not_utf8": [b"\xff\xfe{}", datagram(firefly()) + b"\xc3"],
    "syslog_header": [
        b"<134> {}",
        b"<999>1 - h a - m - {}",
        b"<134>1 - h a - m [unterminated {}",
        b"<134>1 - h a - m {}",
    ],
    "not_json": [b"", b"hello", b"[1, 2]", b"<134>1 - h a - m - {", b"[" * 5000],
    "schema": [
        _set("version", 2),
        _set("version", True),
        _delete("version"),
        _delete("flow-lifecycle"),
        _set("flow-lifecycle", []),
        _set("flow-lifecycle/state", "paused"),
        _delete("flow-lifecycle/start-time"),
        _delete("flow-lifecycle/end-time"),
        _set("flow-lifecycle/start-time", "yesterday"),
        _set("flow-lifecycle/colour", "blue"),
        _delete("flow-id"),
        _set("flow-id/afi", "ipx"),
        _set("flow-id/src-ip", "fd00::1"),
        _set("flow-id/dst-ip", "10.0.0.300"),
        _set("flow-id/protocol", "sctp"),
        _set("flow-id/src-port", "1094"),
        _delete("flow-id/dst-port"),
        _set("flow-id/vlan", 7),
        _delete("context"),
        _delete("context/experiment-id"),
        _set("context/activity-id", 3.0),
        _set("context/activity-id", False),
        _set("context/application", 5),
        _set("context/site", "CERN"),
        _set("usage", "lots"),
        _set("usage/sent", "2"),
        _set("usage/lost", 0),
        _set("netlink", None),
    ],
    "out_of_range": [
        _set("context/experiment-id", 0),
        _set("context/experiment-id", 1024),
        _set("context/activity-id", -1),
        _set("context/activity-id", 64),
        _set("context", {"experiment-id": 1, "activity-id": 0}),  # flow identifier 64, below 65
        _set("flow-id/src-port", 0),
        _set("flow-id/dst-port", 65536),
        _set("usage/received", -5),
    ],
}
CASES = [
    pytest.param(reason, case, id=f"{reason}-{number}")
    for reason, cases in BAD.items()
    for number, case in enumerate(cases)
]


@pytest.mark.parametrize(("reason", "case"), CASES)
def test_each_bad_packet_is_refused_with_its_reason(reason: str, case: Any) -> None:
    packet = case if isinstance(case, bytes) else _broken(case)
    with pytest.raises(FireflyError) as refused:
        parse_firefly(packet)
    assert refused.value.reason == reason, refused.value


def test_the_edges_of_the_ranges_are_accepted() -> None:
    for experiment, activity in ((1, 1), (2, 0), (1023, 63)):
        packet = datagram(firefly(experiment=experiment, activity=activity, src_port=1, dst_port=65535))
        assert parse_firefly(packet).flow_identifier == experiment << 6 | activity
    exactly_the_cap = datagram(firefly())
    exactly_the_cap += b" " * (MAX_DATAGRAM_BYTES - len(exactly_the_cap))
    assert parse_firefly(exactly_the_cap).state == "start"
