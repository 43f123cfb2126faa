"""What the platform writes into Rucio so that Rucio's server keeps proprietary products to their projects.
The rules of access are the Rucio policy package's (``rucio/policy/ska_rucio_policy/access.py``), which
``replicas/rucio_policy_access.py`` links to: what the platform writes and what the server reads have one
definition, and the wheel a deployment installs carries the file itself.

- A product's dataset: its JSON metadata ``srcnet_proprietary_until`` (``dataset_access_meta``), beside the
  ``project`` column ``dataset_meta`` sets.
- A platform user's Rucio account: one attribute per project the user is a member of
  (``sync_project_attributes``), kept in step whenever the platform touches the account and whenever a
  project's members change (``replicas/rucio_membership.py``, in Rucio mode)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from . import rucio_policy_access as access


def dataset_access_meta(product: Any) -> dict[str, str]:
    """The JSON metadata of a product's dataset that says until when it is proprietary (none: public)."""
    until = getattr(product, "proprietary_until", None)
    if getattr(product, "project", None) is None or until is None:
        return {}
    return {access.PROPRIETARY_UNTIL: until.astimezone(dt.UTC).isoformat()}


def wanted_attributes(user: Any) -> set[str]:
    """The project attributes ``user``'s Rucio account must have: one per project the user is a member of."""
    return {access.project_attribute(code) for code in user.projects.values_list("code", flat=True)}


def sync_project_attributes(client: Any, account: str, user: Any) -> None:
    """Add the account's missing project attributes and remove those of projects the user left."""
    have = {
        str(a["key"])
        for a in _attributes(client, account)
        if str(a["key"]).startswith(access.ATTRIBUTE_PREFIX)
    }
    want = wanted_attributes(user)
    for key in sorted(want - have):
        client.add_account_attribute(account, key, access.MEMBER)
    for key in sorted(have - want):
        client.delete_account_attribute(account, key)


def _attributes(client: Any, account: str) -> list[dict[str, Any]]:
    # The client answers a list of lists of {key, value}.
    return [attribute for group in client.list_account_attributes(account) for attribute in group]
