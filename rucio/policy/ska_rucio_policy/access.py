"""Who may ask for a proprietary product through Rucio (pure: no Rucio import, so the platform's tests load it
too and check that the platform writes what this reads).

The platform writes, for each product it registers in Rucio, the dataset's ``project`` column (the
observing project's code) and its JSON metadata ``srcnet_proprietary_until`` (ISO 8601, UTC; absent for
public data); and, for each platform user's Rucio account, one account attribute per project the user is a
member of (``project_attribute``: Rucio's attribute keys are at most 30 characters, a project code up to 40,
so the key is a digest of the code)."""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Mapping

PROPRIETARY_UNTIL = "srcnet_proprietary_until"
ATTRIBUTE_PREFIX = "srcp-"
MEMBER = "member"


def project_attribute(code: str) -> str:
    """The account attribute that makes an account a member of project ``code`` (25 characters)."""
    return ATTRIBUTE_PREFIX + hashlib.sha256(code.encode()).hexdigest()[:20]


def proprietary_until(meta: Mapping[str, object]) -> dt.datetime | None:
    """When the product a DID's metadata describes becomes public; None when it is (or the time is unreadable,
    which the platform never writes: then the project's members and the administrators alone may ask)."""
    value = meta.get(PROPRIETARY_UNTIL)
    if not value:
        return None
    try:
        moment = dt.datetime.fromisoformat(str(value))
    except ValueError:
        return dt.datetime.max.replace(tzinfo=dt.UTC)
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


def closed_to(meta: Mapping[str, object], attributes: set[str], now: dt.datetime) -> str | None:
    """Why an account with account attributes ``attributes`` may not ask for the product of DID metadata
    ``meta`` now; None if it may."""
    project, until = meta.get("project"), proprietary_until(meta)
    if not project or until is None or until <= now:
        return None
    if project_attribute(str(project)) in attributes:
        return None
    return f"proprietary to project {project} until {until.isoformat()}"
