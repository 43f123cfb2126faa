"""Subscriptions: standing rules. A scientist says once "every continuum image of project AA01 to AUSRC";
each product registered afterwards that matches (and that they may see) gets its own rule, made by the same
service as any rule (``services.create_rule``), so the same checks and the same execution apply (embedded:
the push loop plans it; Rucio mode: a Rucio rule under their account).

In Rucio mode these are the platform's subscriptions, not Rucio's: Rucio's transmogrifier is not among the
daemons the platform runs (docs/scientists.md)."""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import ValidationError
from django.utils import timezone

from projects.visibility import visible_products
from replicas.models import DataProduct

from .models import Rule, Subscription
from .selection import FILTER_KEYS, filtered_products
from .services import RucioUnavailable, _checked_limits, create_rule
from .targets import resolve_destinations

# What a standing request may filter on: a registration time range belongs to a one-off rule.
log = logging.getLogger(__name__)
SUBSCRIPTION_FILTERS = tuple(k for k in FILTER_KEYS if not k.startswith("created_"))


def create_subscription(
    *,
    owner: Any,
    filters: Any,
    rse_expression: Any = None,
    srcs: Any = None,
    copies: Any = 1,
    activity: Any = "SKA User Request",
    priority: Any = 3,
    lifetime: Any = None,
    name: str = "",
) -> Subscription:
    """Check the subscription as a rule would be checked (fields named as for a rule), then save it."""
    _checked_limits(
        user=owner,
        copies=copies,
        priority=priority,
        activity=activity,
        lifetime=lifetime,
        expires_at=None,
        now=timezone.now(),
    )
    if not isinstance(filters, dict) or not filters:
        raise ValidationError({"filters": f"At least one of: {', '.join(SUBSCRIPTION_FILTERS)}."})
    unknown = sorted(set(filters) - set(SUBSCRIPTION_FILTERS))
    if unknown:
        raise ValidationError(
            {
                f"filters.{unknown[0]}": "Not a subscription filter; they are "
                f"{', '.join(SUBSCRIPTION_FILTERS)}."
            }
        )
    # An unknown telescope, a project the owner is not in (its future products would be hidden), a bad type.
    filtered_products(owner, filters, members_only=True)
    expression, destinations = resolve_destinations(rse_expression=rse_expression, srcs=srcs)
    if copies > len(destinations):
        raise ValidationError(
            {"copies": f"{copies} copies asked for, but {expression[:80]!r} matches {len(destinations)} "
             "SRC storage endpoint(s)."}
        )  # fmt: skip
    return Subscription.objects.create(
        owner=owner,
        name=str(name or "")[:100],
        filters={k: str(v) for k, v in filters.items()},
        rse_expression=str(rse_expression or ""),
        srcs=list(srcs or []),
        copies=copies,
        activity=activity,
        priority=priority,
        lifetime=lifetime,
    )


def apply_subscriptions(product_id: int) -> list[Rule]:
    """A rule for ``product_id`` from each active subscription it matches and whose owner may see it; a
    subscription that cannot make its rule (its SRC gone, Rucio down) records why and the others go on."""
    made = []
    for subscription in Subscription.objects.filter(is_active=True).select_related("owner"):
        owner = subscription.owner
        if not owner.is_active:
            continue
        try:
            candidates = filtered_products(owner, subscription.filters, members_only=True)
        except ValidationError as exc:  # the owner left the project, the telescope is gone
            _record_error(subscription, exc)
            continue
        if not visible_products(owner, candidates).filter(pk=product_id).exists():
            continue
        product = DataProduct.objects.get(pk=product_id)
        try:
            rule = create_rule(
                owner=owner,
                product=product.did,
                rse_expression=subscription.rse_expression or None,
                srcs=subscription.srcs or None,
                copies=subscription.copies,
                activity=subscription.activity,
                priority=subscription.priority,
                lifetime=subscription.lifetime,
                comment=f"subscription {subscription.pk} {subscription.name}".strip(),
            )
        except (ValidationError, RucioUnavailable) as exc:
            _record_error(subscription, exc)
            continue
        Rule.objects.filter(pk=rule.pk).update(subscription=subscription)
        made.append(rule)
    return made


def _record_error(subscription: Subscription, exc: Exception) -> None:
    if isinstance(exc, ValidationError) and hasattr(exc, "error_dict"):
        text = "; ".join(f"{key}: {' '.join(messages)}" for key, messages in exc.message_dict.items())
    else:
        text = str(exc)
    stamped = f"{timezone.now():%Y-%m-%d %H:%M:%S} {text}"[:2000]
    Subscription.objects.filter(pk=subscription.pk).update(last_error=stamped)


def on_product_registered(product_id: int) -> None:
    """After the registration commits: its subscriptions' rules, each rule its own transaction. A failure
    here is logged and never reaches whoever registered the product."""
    try:
        apply_subscriptions(product_id)
    except Exception:
        log.exception("subscriptions could not be applied to product %s", product_id)
