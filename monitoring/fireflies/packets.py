"""SciTags fireflies: one UDP datagram, optionally an RFC 5424 syslog header, then a JSON object checked
against the firefly schema (version 1, https://scitags.org/schemas/v1.0.0/firefly.schema.json).

Pure: no Django, no sockets. ``parse_firefly`` returns a ``Firefly`` or raises ``FireflyError`` whose
``reason`` is one of ``DROP_REASONS``, a fixed set, so that the collector can count drops by reason
without a label that grows.

What the schema says, and what is checked here:

- ``version``: integer 1.
- ``flow-lifecycle``: ``state`` (start, ongoing, end), ``start-time`` (date-time), ``end-time``
  (date-time, required when the state is end), optional ``current-time``; no other field.
- ``flow-id``: ``afi`` (ipv4, ipv6), ``src-ip`` and ``dst-ip`` addresses of that family, ``protocol``
  (tcp, udp), ``src-port`` and ``dst-port`` (1-65535, as the schema says); no other field.
- ``context``: ``experiment-id`` and ``activity-id`` integers, optional ``application`` string; no
  other field. The ranges are the SciTags flow identifier's: experiment 1-1023, activity 0-63, and the
  identifier ``experiment << 6 | activity`` within 65-65535, as the platform's FTS3 endpoint checks a
  file's ``scitag``. (Activity 0 is what flowd sends when it knows no activity.)
- ``usage`` (optional): ``received`` and ``sent`` integers, here also at least 0; no other field.
- ``netlink`` (optional): any object; ``rtt`` (seconds) is read when it is a number.

A JSON boolean is not an integer here (Python's ``bool`` is an ``int``). Times without an offset are read
as UTC (the schema's date-time has one; a sender that leaves it out is not punished for it)."""

from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

# Larger datagrams are dropped unread: a firefly is a few hundred bytes (senders keep it within one
# 1500-byte MTU), and the collector's receive buffer is this plus one byte, to see that it was larger.
MAX_DATAGRAM_BYTES = 8192

EXPERIMENT_IDS = range(1, 1024)
ACTIVITY_IDS = range(0, 64)
FLOW_IDENTIFIERS = range(65, 65536)
PORTS = range(1, 65536)

STATES = ("start", "ongoing", "end")

# Why a datagram was dropped: the values of srcnet_firefly_packets_dropped_total's label.
DROP_REASONS = (
    "oversized",  # larger than MAX_DATAGRAM_BYTES
    "not_utf8",  # the bytes are not UTF-8 text
    "syslog_header",  # starts like a syslog header ('<') that is not RFC 5424's
    "not_json",  # the message is not a JSON object
    "schema",  # a required field is missing, a field is unknown or of the wrong type or value
    "out_of_range",  # experiment or activity id, flow identifier, port or byte count out of range
)


class FireflyError(ValueError):
    """A datagram that is not a valid firefly; ``reason`` is one of ``DROP_REASONS``."""

    def __init__(self, reason: str, detail: str) -> None:
        assert reason in DROP_REASONS, reason
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class FlowKey:
    """The flow's 5-tuple, as the firefly's ``flow-id`` gives it (from the sender's side)."""

    protocol: str
    src_ip: ipaddress.IPv4Address | ipaddress.IPv6Address
    src_port: int
    dst_ip: ipaddress.IPv4Address | ipaddress.IPv6Address
    dst_port: int


@dataclass(frozen=True)
class Firefly:
    """One valid firefly."""

    state: str
    start_time: datetime
    end_time: datetime | None
    flow: FlowKey
    experiment: int
    activity: int
    application: str | None
    received_bytes: int | None
    sent_bytes: int | None
    rtt_seconds: float | None
    # The syslog header's HOSTNAME and APP-NAME, when there was a header ("-" read as None).
    sender_host: str | None = None
    sender_app: str | None = None

    @property
    def flow_identifier(self) -> int:
        """The SciTags flow identifier, ``experiment << 6 | activity`` (a transfer's ``scitag``)."""
        return self.experiment << 6 | self.activity


# RFC 5424: "<PRI>VERSION SP TIMESTAMP SP HOSTNAME SP APP-NAME SP PROCID SP MSGID SP STRUCTURED-DATA", each
# header field printable ASCII without spaces ("-" when empty). XRootD's pmark sends
# "<134>1 - <host> xrootd - firefly-json - {...}", flowd-go a timestamp in the second field.
_SYSLOG_HEADER = re.compile(
    r"<(?P<pri>\d{1,3})>(?P<version>[1-9]\d{0,2}) (?P<timestamp>\S+) (?P<host>\S+) (?P<app>\S+) "
    r"(?P<procid>\S+) (?P<msgid>\S+) "
)


def _skip_structured_data(text: str, at: int) -> int:
    """The index after STRUCTURED-DATA starting at ``at``: "-", or one or more "[id param="value" ...]"
    elements, in whose quoted values '\\]', '\\"' and '\\\\' are escaped."""
    if text.startswith("-", at):
        return at + 1
    if not text.startswith("[", at):
        raise FireflyError("syslog_header", "no structured data after the header")
    while at < len(text) and text[at] == "[":
        at += 1
        quoted = False
        while True:
            if at >= len(text):
                raise FireflyError("syslog_header", "an unterminated structured data element")
            char = text[at]
            if quoted and char == "\\":
                at += 2
                continue
            if char == '"':
                quoted = not quoted
            elif char == "]" and not quoted:
                at += 1
                break
            at += 1
    return at


def split_syslog(text: str) -> tuple[str, str | None, str | None]:
    """The message of a datagram and the header's host and app-name: the text itself (None, None) when it
    has no header, which is when it does not start with '<'."""
    if not text.startswith("<"):
        return text, None, None
    header = _SYSLOG_HEADER.match(text)
    if header is None or int(header["pri"]) > 191:
        raise FireflyError("syslog_header", "not an RFC 5424 header")
    at = _skip_structured_data(text, header.end())
    message = text[at:]
    if message.startswith(" "):
        message = message[1:]
    message = message.removeprefix("\ufeff")  # RFC 5424's optional byte order mark before a UTF-8 MSG

    def field(name: str) -> str | None:
        return None if header[name] == "-" else header[name]

    return message, field("host"), field("app")


def _object(document: dict[str, Any], name: str, *, required: bool) -> dict[str, Any] | None:
    value = document.get(name)
    if value is None and name not in document and not required:
        return None
    if name not in document:
        raise FireflyError("schema", f"{name} is missing")
    if not isinstance(value, dict):
        raise FireflyError("schema", f"{name} is not an object")
    return value


def _only(section: dict[str, Any], name: str, allowed: set[str]) -> None:
    unknown = sorted(set(section) - allowed)
    if unknown:
        raise FireflyError("schema", f"{name} has unknown fields: {', '.join(unknown)[:100]}")


def _integer(section: dict[str, Any], path: str, key: str, *, required: bool = True) -> int | None:
    if key not in section:
        if required:
            raise FireflyError("schema", f"{path}.{key} is missing")
        return None
    value = section[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise FireflyError("schema", f"{path}.{key} is not an integer")
    return value


def _string(section: dict[str, Any], path: str, key: str, *, required: bool = True) -> str | None:
    if key not in section:
        if required:
            raise FireflyError("schema", f"{path}.{key} is missing")
        return None
    value = section[key]
    if not isinstance(value, str):
        raise FireflyError("schema", f"{path}.{key} is not a string")
    return value


def _choice(section: dict[str, Any], path: str, key: str, choices: tuple[str, ...]) -> str:
    value = _string(section, path, key)
    if value not in choices:
        raise FireflyError("schema", f"{path}.{key} is not one of {', '.join(choices)}")
    return value


def _time(section: dict[str, Any], path: str, key: str, *, required: bool) -> datetime | None:
    text = _string(section, path, key, required=required)
    if text is None:
        return None
    try:
        when = datetime.fromisoformat(text)
    except ValueError as exc:
        raise FireflyError("schema", f"{path}.{key} is not a date-time") from exc
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _in(value: int, allowed: range, what: str) -> int:
    if value not in allowed:
        raise FireflyError("out_of_range", f"{what} {value} is not within {allowed.start}-{allowed.stop - 1}")
    return value


def parse_firefly(datagram: bytes) -> Firefly:
    """The firefly in one UDP datagram; FireflyError when it is not a valid one."""
    if len(datagram) > MAX_DATAGRAM_BYTES:
        raise FireflyError("oversized", f"more than {MAX_DATAGRAM_BYTES} bytes")
    try:
        text = datagram.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FireflyError("not_utf8", str(exc)[:100]) from exc
    message, host, app = split_syslog(text)
    try:
        document = json.loads(message)
    except (ValueError, RecursionError) as exc:
        raise FireflyError("not_json", str(exc)[:100]) from exc
    if not isinstance(document, dict):
        raise FireflyError("not_json", "not a JSON object")

    version = _integer(document, "firefly", "version")
    if version != 1:
        raise FireflyError("schema", f"version {version} is not 1")

    lifecycle = _object(document, "flow-lifecycle", required=True)
    assert lifecycle is not None
    _only(lifecycle, "flow-lifecycle", {"state", "start-time", "end-time", "current-time"})
    state = _choice(lifecycle, "flow-lifecycle", "state", STATES)
    start_time = _time(lifecycle, "flow-lifecycle", "start-time", required=True)
    assert start_time is not None
    end_time = _time(lifecycle, "flow-lifecycle", "end-time", required=state == "end")
    _time(lifecycle, "flow-lifecycle", "current-time", required=False)

    flow_id = _object(document, "flow-id", required=True)
    assert flow_id is not None
    _only(flow_id, "flow-id", {"afi", "src-ip", "dst-ip", "protocol", "src-port", "dst-port"})
    afi = _choice(flow_id, "flow-id", "afi", ("ipv4", "ipv6"))
    family = ipaddress.IPv4Address if afi == "ipv4" else ipaddress.IPv6Address
    addresses = []
    for key in ("src-ip", "dst-ip"):
        text_address = _string(flow_id, "flow-id", key)
        try:
            addresses.append(family(text_address))
        except ValueError as exc:
            raise FireflyError("schema", f"flow-id.{key} is not an {afi} address") from exc
    protocol = _choice(flow_id, "flow-id", "protocol", ("tcp", "udp"))
    ports = []
    for key in ("src-port", "dst-port"):
        port = _integer(flow_id, "flow-id", key)
        assert port is not None
        ports.append(_in(port, PORTS, f"flow-id.{key}"))

    context = _object(document, "context", required=True)
    assert context is not None
    _only(context, "context", {"experiment-id", "activity-id", "application"})
    experiment = _integer(context, "context", "experiment-id")
    activity = _integer(context, "context", "activity-id")
    assert experiment is not None and activity is not None
    _in(experiment, EXPERIMENT_IDS, "context.experiment-id")
    _in(activity, ACTIVITY_IDS, "context.activity-id")
    _in(experiment << 6 | activity, FLOW_IDENTIFIERS, "the flow identifier (experiment << 6 | activity)")
    application = _string(context, "context", "application", required=False)

    received = sent = None
    usage = _object(document, "usage", required=False)
    if usage is not None:
        _only(usage, "usage", {"received", "sent"})
        received = _integer(usage, "usage", "received", required=False)
        sent = _integer(usage, "usage", "sent", required=False)
        for key, value in (("received", received), ("sent", sent)):
            if value is not None and value < 0:
                raise FireflyError("out_of_range", f"usage.{key} {value} is negative")

    rtt = None
    netlink = _object(document, "netlink", required=False)
    if netlink is not None:
        value = netlink.get("rtt")
        if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
            rtt = float(value)

    return Firefly(
        state=state,
        start_time=start_time,
        end_time=end_time,
        flow=FlowKey(protocol, addresses[0], ports[0], addresses[1], ports[1]),
        experiment=experiment,
        activity=activity,
        application=application,
        received_bytes=received,
        sent_bytes=sent,
        rtt_seconds=rtt,
        sender_host=host,
        sender_app=app,
    )
