"""YAML with line numbers, and the unit strings the topology file uses (pure: no Django).

Every mapping loaded here remembers the line it started on, so an import error can say
"line 42, links[3].capacity: ..." instead of a bare exception.
"""

from __future__ import annotations

import re
from typing import Any

import yaml


class LinedDict(dict):  # type: ignore[type-arg]
    """A mapping that knows the line it came from."""

    line: int = 0


class TopologyFileError(ValueError):
    """A problem in a topology file, naming the line and the field."""

    def __init__(self, message: str, *, line: int | None = None, field: str | None = None) -> None:
        self.line = line
        self.field = field
        self.reason = message
        where = ", ".join(part for part in (f"line {line}" if line else "", field or "") if part)
        super().__init__(f"{where}: {message}" if where else message)


class _LineLoader(yaml.SafeLoader):
    def compose_node(self, parent: Any, index: Any) -> Any:
        # No topology file needs an alias, and aliases are how a few lines of YAML ("billion laughs") grow
        # into billions of nodes for whoever walks the document: refused outright.
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            raise TopologyFileError("aliases (*name) are not accepted in a topology file", line=mark.line + 1)
        return super().compose_node(parent, index)


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> LinedDict:
    loader.flatten_mapping(node)
    mapping = LinedDict()
    mapping.line = node.start_mark.line + 1
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in mapping:
            raise TopologyFileError(f"duplicate key {key!r}", line=key_node.start_mark.line + 1)
        mapping[key] = loader.construct_object(value_node, deep=True)
    return mapping


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


# A topology file of the whole SKA network is some 30 kB; anything past this is not one.
MAX_FILE_BYTES = 10 * 2**20


def decode(data: bytes, source: str = "the file") -> str:
    """The text of a topology file given as bytes: UTF-8 (a BOM allowed), at most MAX_FILE_BYTES."""
    if len(data) > MAX_FILE_BYTES:
        raise TopologyFileError(f"{source} is larger than {MAX_FILE_BYTES // 2**20} MiB: not a topology file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise TopologyFileError(f"not UTF-8 (byte {exc.start})", line=line) from exc


def load(text: str) -> Any:
    if len(text) > MAX_FILE_BYTES:
        raise TopologyFileError(f"the file is larger than {MAX_FILE_BYTES // 2**20} MiB: not a topology file")
    try:
        return yaml.load(text, Loader=_LineLoader)
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else None
        raise TopologyFileError(f"not valid YAML: {exc.problem}", line=line) from exc
    except yaml.YAMLError as exc:
        raise TopologyFileError(f"not valid YAML: {exc}") from exc
    except RecursionError as exc:
        # Sequences or mappings nested thousands deep: no topology file looks like that.
        raise TopologyFileError("not a topology file: nested too deeply") from exc


_RATE_UNITS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BYTE_UNITS = {
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "pb": 10**15,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
    "pib": 2**50,
}
_NUMBER_UNIT = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([a-zA-Z/]*)\s*$")


def parse_rate(value: Any) -> int:
    """Bits per second from ``100G``, ``100 Gbit/s``, ``20gbps`` or a plain number of bit/s."""
    if isinstance(value, bool):
        raise ValueError(f"not a rate: {value!r}")
    if isinstance(value, int | float):
        return int(value)
    match = _NUMBER_UNIT.match(str(value))
    if not match:
        raise ValueError(f"not a rate: {value!r} (use e.g. '100G' or '40 Gbit/s')")
    unit = match.group(2).lower().replace("bit/s", "").replace("bps", "").replace("b/s", "")
    if unit not in _RATE_UNITS:
        raise ValueError(f"unknown rate unit in {value!r} (use k, M, G or T, optionally with 'bit/s')")
    return int(float(match.group(1)) * _RATE_UNITS[unit])


def parse_bytes(value: Any) -> int:
    """Bytes from ``2PB``, ``500 GiB`` or a plain number."""
    if isinstance(value, bool):
        raise ValueError(f"not a size: {value!r}")
    if isinstance(value, int | float):
        return int(value)
    match = _NUMBER_UNIT.match(str(value))
    if not match:
        raise ValueError(f"not a size: {value!r} (use e.g. '2PB' or '500GiB')")
    unit = match.group(2).lower() or "b"
    if unit not in _BYTE_UNITS:
        raise ValueError(f"unknown size unit in {value!r}")
    return int(float(match.group(1)) * _BYTE_UNITS[unit])


def format_rate(bps: float) -> str:
    for unit, scale in (("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3)):
        if bps >= scale:
            return f"{bps / scale:g}{unit}"
    return f"{bps:g}"
