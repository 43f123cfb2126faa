"""Rucio's generic permissions, and one rule of the platform's: a product still proprietary is asked for (a
replication rule on its dataset or on any of its files) only by members of its project, and by root and the
administrator accounts (the platform's own, which checks projects itself before it asks on a user's behalf).
Without it a scientist with the plain ``rucio`` client could replicate any proprietary product."""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from rucio.common.exception import DataIdentifierNotFound, ScopeNotFound
from rucio.common.types import InternalScope
from rucio.core.account import has_account_attribute, list_account_attributes
from rucio.core.did import get_did, get_metadata, list_parent_dids
from rucio.core.permission.generic import has_permission as generic_permission

from .access import PROPRIETARY_UNTIL, closed_to

__all__ = ["has_permission"]
LOGGER = logging.getLogger(__name__)


def has_permission(issuer: Any, action: str, kwargs: dict[str, Any], *, session: Any) -> Any:
    if action == "add_rule":
        try:
            refusal = _proprietary(issuer, kwargs.get("dids") or [], session)
        except Exception as exc:  # never a rule because the check broke; and not a TypeError, which Rucio
            # takes for "no such action here" and answers with its generic permissions instead
            LOGGER.exception("the proprietary-product check failed for %s", issuer)
            refusal = f"the check of proprietary products failed ({type(exc).__name__}: {exc})"
        if refusal:
            # Imported here: rucio.core.permission imports this module while it is itself being imported.
            from rucio.core.permission import PermissionResult

            return PermissionResult(False, refusal)
    return generic_permission(issuer, action, kwargs, session=session)


def _proprietary(issuer: Any, dids: list[dict[str, Any]], session: Any) -> str | None:
    """Why ``issuer`` may not ask for one of ``dids``; None if it may ask for all of them."""
    if issuer.external == "root" or has_account_attribute(account=issuer, key="admin", session=session):
        return None
    attributes = {str(a["key"]) for a in list_account_attributes(issuer, session=session)}
    now = dt.datetime.now(dt.UTC)
    for did in dids:
        # The REST layer hands the DIDs over with their scopes already internal; a direct call may not.
        scope = (
            did["scope"]
            if isinstance(did["scope"], InternalScope)
            else InternalScope(did["scope"], vo=issuer.vo)
        )
        for meta in _products_of(scope, did["name"], session):
            why = closed_to(meta, attributes, now)
            if why:
                return f"{did['scope']}:{did['name']} is {why}"
    return None


def _products_of(scope: Any, name: str, session: Any) -> list[dict[str, Any]]:
    """The metadata of the product DIDs ``scope:name`` belongs to: itself when it carries the platform's
    product metadata (a product's dataset), else its parent datasets' (a file of a product). A DID Rucio
    does not know is left to Rucio's own answer."""
    try:
        get_did(scope, name, session=session)
    except (DataIdentifierNotFound, ScopeNotFound):  # Rucio refuses the rule itself, naming the DID
        return []
    own = get_metadata(scope, name, plugin="ALL", session=session)
    if own.get(PROPRIETARY_UNTIL) or own.get("project"):
        return [own]
    parents = list_parent_dids(scope, name, session=session)
    return [get_metadata(p["scope"], p["name"], plugin="ALL", session=session) for p in parents]
