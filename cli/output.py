"""Rendering results as a table or JSON (data to stdout; diagnostics go to stderr elsewhere)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        return ", ".join(_cell(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def render_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """A plain aligned text table; numbers are right-aligned."""
    cells = [[_cell(row.get(col)) for col in columns] for row in rows]
    widths = [max([len(col), *(len(r[i]) for r in cells)]) for i, col in enumerate(columns)]
    numeric = [all(_is_number(r[i]) for r in cells) and cells for i in range(len(columns))]

    def line(values: Sequence[str]) -> str:
        parts = [v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric, strict=True)]
        return "  ".join(parts).rstrip()

    out = [line([c.upper() for c in columns]), line(["-" * w for w in widths])]
    out += [line(r) for r in cells]
    return "\n".join(out)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def render_json(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True, default=str)


# -- Additions for the srcnet CLI -------------------------------------------------------------------------

FORMATS = ("table", "json")


def render_kv(obj: Mapping[str, Any], keys: Sequence[str]) -> str:
    """``key: value`` lines, keys aligned, for ``show`` commands."""
    width = max((len(k) for k in keys), default=0)
    return "\n".join(f"{k.ljust(width)}  {_cell(obj.get(k))}".rstrip() for k in keys)


def human_bytes(value: Any) -> str:
    """1073741824 -> '1.0 GiB'; None -> ''."""
    if value is None or value == "":
        return ""
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(size) < 1024 or unit == "PiB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} PiB"  # pragma: no cover - the loop always returns


def human_rate(bps: Any) -> str:
    """Bits per second -> '38.5 Gbit/s'; None -> ''."""
    if bps is None or bps == "":
        return ""
    rate = float(bps)
    for unit in ("bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s"):
        if abs(rate) < 1000 or unit == "Tbit/s":
            return f"{rate:.0f} {unit}" if unit == "bit/s" else f"{rate:.1f} {unit}"
        rate /= 1000
    return f"{rate:.1f} Tbit/s"  # pragma: no cover


def ms(value: Any) -> str:
    return "" if value is None else f"{float(value):.1f}"
