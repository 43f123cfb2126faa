"""How each entry of a topology file maps onto a model: which keys, which converter, which field."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..yamlio import parse_bytes, parse_rate


@dataclass(frozen=True)
class Key:
    """One key of a file entry: the model field it sets and how its value is converted."""

    field: str
    convert: Callable[[Any], Any] = lambda value: value
    required: bool = False


def text(value: Any) -> str:
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise ValueError(f"expected text, got {value!r}")
    return str(value)


def number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"expected a number, got {value!r}")
    return float(value)


def integer(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"expected an integer, got {value!r}")
    return value


def boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {value!r}")
    return value


def name_list(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"expected a list of names, got {value!r}")
    return list(value)


SITE_KEYS = {
    "name": Key("name", text, required=True),
    "region": Key("region", text, required=True),
    "country": Key("country", text, required=True),
    "latitude": Key("latitude", number, required=True),
    "longitude": Key("longitude", number, required=True),
    "vrf": Key("vrf", text),
    "description": Key("description", text),
}
TELESCOPE_KEYS = {
    **SITE_KEYS,
    "daily_volume": Key("daily_volume_bytes", parse_bytes),
    "sdp_buffer": Key("sdp_buffer_bytes", parse_bytes),
}
CENTRE_KEYS = {
    **SITE_KEYS,
    "distribution_centre": Key("is_distribution_centre", boolean),
    "share_weight": Key("share_weight", number),
    "budget_per_telescope": Key("budget_per_telescope_bps", parse_rate),
    "peak": Key("peak_bps", parse_rate),
}
POP_KEYS = {**SITE_KEYS, "operator": Key("operator", text)}
VRF_KEYS = {
    "name": Key("name", text, required=True),
    "scope": Key("scope", text, required=True),
    "parent": Key("parent", text),
    "route_distinguisher": Key("route_distinguisher", text),
    "description": Key("description", text),
}
STORAGE_KEYS = {
    "name": Key("name", text, required=True),
    "site": Key("site", text, required=True),
    "role": Key("role", text),
    "hostname": Key("hostname", text, required=True),
    "root_port": Key("root_port", integer),
    "http_port": Key("http_port", integer),
    "prefix": Key("prefix", text),
    "tpc_scheme": Key("tpc_scheme", text),
    "token_audience": Key("token_audience", text),
    "capacity": Key("capacity_bytes", parse_bytes),
    "active": Key("is_active", boolean),
}
DTN_KEYS = {
    "name": Key("name", text, required=True),
    "site": Key("site", text, required=True),
    "hostname": Key("hostname", text, required=True),
    "nic_speed": Key("nic_speed_bps", parse_rate),
    "tcp_window": Key("tcp_window_bytes", parse_bytes),
    "tuning_profile": Key("tuning_profile", text),
}
LINK_KEYS = {
    "name": Key("name", text, required=True),
    "a": Key("a_end", text, required=True),
    "b": Key("b_end", text, required=True),
    "kind": Key("kind", text),
    "capacity": Key("capacity_bps", parse_rate, required=True),
    "rtt_ms": Key("rtt_ms", number, required=True),
    "loss": Key("loss_rate", number),
    "owner": Key("owner", text),
    "capex_eur": Key("capex_eur", number),
    "opex_eur_per_year": Key("opex_eur_per_year", number),
    "vrfs": Key("vrfs", name_list),
    "up": Key("is_up", boolean),
}
DECLARED_PATH_KEYS = {
    "name": Key("name", text, required=True),
    "source": Key("source", text, required=True),
    "destination": Key("destination", text, required=True),
    "links": Key("links", name_list, required=True),
    "vrf": Key("vrf", text),
}
COMPUTE_RULE_KEYS = {"from": Key("from", name_list, required=True), "to": Key("to", name_list, required=True)}
