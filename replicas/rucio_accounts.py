"""Scientists in Rucio: an account per platform user, and the rules the platform makes under it.

Part of the Rucio adapter (``replicas.rucio``): it talks to Rucio only through ``RucioAdapter.client`` and
turns Rucio's refusals into :class:`RucioAdapterError` (``RuleRefused`` names the request's field). A
platform user ``alice`` (id 7) is the Rucio USER account ``u7-alice``: the id keeps two users whose names
differ only in characters Rucio refuses apart. The platform's own account (root, or an admin account) creates
the account, keeps its e-mail and status in step with the user's and sets its quota at the rule's RSEs, then
makes the rule with ``account=`` that user's account: Rucio counts the bytes against the scientist's quota
and shows the rule as the scientist's, as if they had made it with their own client."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from .models import DataProduct
from .rucio import RucioAdapter, RucioAdapterError
from .rucio_access import sync_project_attributes
from .rucio_sync import RULE_COMMENT_PREFIX

ACCOUNT_MAX = 25
# Rucio refuses a rule with these errors; the platform names the request's field that caused it.
FIELD_OF_ERROR = {
    "InvalidRSEExpression": "rse_expression",
    "InsufficientTargetRSEs": "copies",
    "InsufficientAccountLimit": "rse_expression",
    "DataIdentifierNotFound": "product",
    "InvalidRuleWeight": "rse_expression",
    "InvalidObject": "lifetime",
}


class RuleRefused(RucioAdapterError):
    """Rucio refused a rule; ``field`` is the request's field its reason points at."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def rucio_account_name(user: Any) -> str:
    """The Rucio account of a platform user: ``u<id>-<name>`` in Rucio's alphabet, at most 25 characters."""
    slug = re.sub(r"[^a-z0-9_-]", "-", str(user.get_username()).lower()).strip("-") or "user"
    return f"u{user.pk}-{slug}"[:ACCOUNT_MAX].rstrip("-_")


def ensure_account(adapter: RucioAdapter, user: Any, rses: Iterable[str]) -> str:
    """The user's Rucio account, created or brought in step (e-mail, ACTIVE or SUSPENDED as the user is),
    with an unlimited quota at each of ``rses`` where it has none; returns its name."""
    name = rucio_account_name(user)
    email = user.email or f"{name}@srcnet.invalid"
    client = adapter.client
    # Before anything is made in Rucio: a rule to storage Rucio does not know is refused, account untouched.
    for rse in sorted(set(rses)):
        if not adapter.rse_exists(rse):
            raise RuleRefused("rse_expression", f"Rucio refused the rule: RSE {rse} is unknown to Rucio")
    with adapter._errors(f"cannot keep the Rucio account {name} of {user.get_username()} in step"):
        try:
            client.add_account(name, "USER", email)
        except Exception as exc:  # Rucio lists no suspended account: "already there" is only known so
            if type(exc).__name__ != "Duplicate":
                raise
        if not user.is_active:
            # Rucio hides a suspended account from most calls: suspend it last, nothing else to keep.
            client.update_account(name, "status", "SUSPENDED")
            return name
        client.update_account(name, "status", "ACTIVE")
        if (client.get_account(name) or {}).get("email") != email:
            client.update_account(name, "email", email)
        # Its projects, as Rucio's server reads them to let it ask for proprietary products (rucio_access).
        sync_project_attributes(client, name, user)
        limits = client.get_local_account_limits(name) or {}
        for rse in sorted(set(rses)):
            if rse not in limits:
                client.set_local_account_limit(name, rse, -1)
    return name


def add_user_rules(
    adapter: RucioAdapter,
    *,
    products: Sequence[DataProduct],
    account: str,
    rse_expression: str,
    copies: int,
    lifetime: int | None,
    activity: str,
    priority: int,
    comment: str,
) -> dict[str, str]:
    """One rule per product's dataset under ``account``, made in one call (Rucio makes all or none);
    returns DID -> rule id. Each product is registered in Rucio first if it is not yet."""
    for product in products:
        adapter.register_product(product)
    dids = [{"scope": p.scope, "name": p.name} for p in products]
    try:
        rule_ids = adapter.client.add_replication_rule(
            dids=dids,
            copies=copies,
            rse_expression=rse_expression,
            priority=priority,
            lifetime=lifetime,
            grouping="DATASET",
            activity=activity,
            account=account,
            comment=f"{RULE_COMMENT_PREFIX} {comment}"[:255],
        )
    except Exception as exc:  # Rucio's exceptions, and the transport's
        kind = type(exc).__name__
        detail = f"{kind}: {str(exc).strip()[:300]}"
        if kind in FIELD_OF_ERROR:
            raise RuleRefused(FIELD_OF_ERROR[kind], f"Rucio refused the rule: {detail}") from exc
        raise RucioAdapterError(f"Rucio could not make the rule: {detail}") from exc
    out: dict[str, str] = {}
    with adapter._errors("cannot read the rules just made"):
        for rule_id in rule_ids:
            raw = adapter.client.get_replication_rule(rule_id)
            out[f"{raw['scope']}:{raw['name']}"] = str(rule_id)
    return out


def delete_rules(adapter: RucioAdapter, rule_ids: Iterable[str]) -> None:
    """Delete the rules (their replicas are left to Rucio's reaper, as ``rucio rule delete`` does)."""
    with adapter._errors("cannot delete the rules"):
        for rule_id in rule_ids:
            try:
                adapter.client.delete_replication_rule(rule_id, purge_replicas=False)
            except Exception as exc:
                if type(exc).__name__ != "RuleNotFound":  # gone already (expired): nothing to do
                    raise


def add_user_subscription(
    adapter: RucioAdapter,
    *,
    name: str,
    account: str,
    metadata: dict[str, str],
    rse_expression: str,
    copies: int,
    lifetime: int | None,
    activity: str,
    priority: int,
    comment: str,
) -> str:
    """A Rucio subscription under ``account``: Rucio's transmogrifier makes a rule (``copies`` at
    ``rse_expression``) for every new dataset whose DID metadata equals ``metadata`` (Rucio's own columns
    ``project``, ``datatype``, ``stream_name``, set when the platform registers a product); returns its id."""
    rule: dict[str, Any] = {
        "copies": copies,
        "rse_expression": rse_expression,
        "activity": activity,
        "grouping": "DATASET",
        "comment": f"{RULE_COMMENT_PREFIX} {comment}"[:255],
    }
    if lifetime:
        rule["lifetime"] = lifetime
    # Rucio matches each value as a regular expression from the start: anchored, it is an equality.
    filter_ = {"did_type": ["DATASET"], **{k: [f"^{re.escape(v)}$"] for k, v in metadata.items()}}
    try:
        return str(
            adapter.client.add_subscription(
                name=name,
                account=account,
                filter_=filter_,
                replication_rules=[rule],  # type: ignore[arg-type]  # a list, whatever the hint says
                comments=comment[:255],
                lifetime=False,
                retroactive=False,
                dry_run=False,
                priority=priority,
            )
        )
    except Exception as exc:  # Rucio's exceptions, and the transport's
        raise RucioAdapterError(
            f"Rucio could not make the subscription: {type(exc).__name__}: {exc}"
        ) from exc


def stop_subscription(adapter: RucioAdapter, *, name: str, account: str) -> None:
    """Stop a subscription (Rucio keeps it, INACTIVE; the rules it made stay)."""
    with adapter._errors(f"cannot stop the subscription {name}"):
        adapter.client.deactivate_subscription(name, account=account)
