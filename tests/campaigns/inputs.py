"""A campaign's inputs that pass every check: the tests change one field at a time."""

from __future__ import annotations

from typing import Any

MIB = 1024 * 1024
GOOD: dict[str, Any] = {
    "name": "dc-1",
    "mode": "real",
    "sources": ["SKA1-Low"],
    "destinations": ["UKSRC_DISK"],
    "target_rate_bps": 2e8,
    "duration_seconds": 30,
    "min_file_bytes": MIB,
    "max_file_bytes": 4 * MIB,
}
