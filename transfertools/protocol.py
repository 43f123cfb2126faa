"""Words of the FTS3 REST protocol that its clients and the platform's own endpoint both speak: its time
format and the per-entry statuses of its bulk answers."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

DATE_FORMAT = "%Y-%m-%dT%H:%M:%S"  # UTC, whole seconds, no zone suffix
# A bulk query (and a bulk cancel or priority change) answers 207 Multi-Status when any entry failed,
# typically an unknown job id; each entry then carries its own "http_status".
HTTP_OK = "200 Ok"
HTTP_NOT_MODIFIED = "304 Not Modified"
HTTP_NOT_FOUND = "404 Not Found"


def fts_date(value: datetime | None) -> str | None:
    """UTC, no zone suffix: Rucio parses exactly this with strptime."""
    return value.strftime(DATE_FORMAT) if value else None


def parse_fts_date(value: Any) -> datetime | None:
    """An FTS3 time back into an aware UTC datetime; None for no time, or for a value in another form (a
    client following jobs treats an odd time as unknown rather than failing)."""
    try:
        return datetime.strptime(str(value), DATE_FORMAT).replace(tzinfo=UTC) if value else None
    except ValueError:
        return None
