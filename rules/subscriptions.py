"""Subscriptions: standing rules. A scientist says once "every continuum image of project AA01 to AUSRC";
each product registered afterwards that matches (and that they may see) gets its own rule, made by the same
service as any rule (``services.create_rule``), so the same checks and the same execution apply (embedded:
the push loop plans it; Rucio mode: a Rucio rule under their account).

In Rucio mode a subscription is a Rucio subscription under the owner's Rucio account instead: Rucio's
transmogrifier makes the rules for new datasets whose DID metadata match (the platform sets ``project``,
``datatype``, ``stream_name`` when it registers a product in Rucio), and the platform follows them as any
rule. It must name one of the owner's projects: Rucio cannot tell a proprietary product from a public one,
and a new product of a project is proprietary to its members."""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from replicas.models import DataProduct
from replicas.visibility import visible_products
from srcnet.roles import role_of

from .choices import limits_for
from .models import Rule, Subscription
from .selection import FILTER_KEYS, filtered_products
from .services import RucioUnavailable, _checked_limits, create_rule, through_rucio, within_quota
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
    if through_rucio() and "project" not in filters:
        raise ValidationError(
            {"filters.project": "In Rucio mode a subscription names one of your projects (Rucio cannot tell "
             "a proprietary product from a public one)."}
        )  # fmt: skip
    with transaction.atomic():
        within_quota(
            owner, "subscriptions", owner.subscriptions, limits_for(role_of(owner)).max_subscriptions
        )
        subscription = Subscription.objects.create(
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
        if through_rucio():
            _make_in_rucio(subscription, [d.name for d in destinations])
    return subscription


# The platform's filter names -> Rucio's own DID metadata columns (``RucioAdapter.register_product``).
RUCIO_METADATA = {"project": "project", "product_type": "datatype", "telescope": "stream_name"}


def _make_in_rucio(subscription: Subscription, destinations: list[str]) -> None:
    from replicas.rucio import RucioAdapter, RucioAdapterError
    from replicas.rucio_accounts import RuleRefused, add_user_subscription, ensure_account
    from replicas.rucio_sync import rse_expression

    if "observation_id" in subscription.filters:
        raise ValidationError(
            {"filters.observation_id": "Rucio's subscriptions cannot select by observation."}
        )
    owner = subscription.owner
    try:
        adapter = RucioAdapter.from_env()
        account = ensure_account(adapter, owner, destinations)
        subscription.rucio_subscription = add_user_subscription(
            adapter,
            name=f"srcnet-{subscription.pk}",
            account=account,
            metadata={RUCIO_METADATA[k]: v for k, v in subscription.filters.items()},
            rse_expression=rse_expression(destinations),
            copies=subscription.copies,
            lifetime=subscription.lifetime or _longest_lifetime(owner),
            activity=subscription.activity,
            priority=subscription.priority,
            comment=f"subscription {subscription.pk} of {owner.get_username()} {subscription.name}".strip(),
        )
    except RuleRefused as exc:
        raise ValidationError({exc.field: str(exc)}) from exc
    except RucioAdapterError as exc:
        raise RucioUnavailable(str(exc)) from exc
    subscription.rucio_account = account
    subscription.save(update_fields=["rucio_account", "rucio_subscription"])


def _longest_lifetime(owner: Any) -> int | None:
    days = limits_for(role_of(owner)).max_lifetime_days
    return None if days is None else days * 86400


@transaction.atomic
def remove_subscription(*, subscription: Subscription) -> None:
    """Remove it (the rules it made stay); in Rucio mode its Rucio subscription is made INACTIVE."""
    if subscription.rucio_subscription:
        from replicas.rucio import RucioAdapter, RucioAdapterError
        from replicas.rucio_accounts import stop_subscription

        try:
            stop_subscription(
                RucioAdapter.from_env(), name=f"srcnet-{subscription.pk}", account=subscription.rucio_account
            )
        except RucioAdapterError as exc:
            raise RucioUnavailable(str(exc)) from exc
    subscription.delete()


def apply_subscriptions(product_id: int) -> list[Rule]:
    """A rule for ``product_id`` from each active subscription it matches and whose owner may see it; a
    subscription that cannot make its rule (its SRC gone, Rucio down) records why and the others go on."""
    made = []
    # Rucio's own subscriptions are Rucio's transmogrifier's to apply.
    active = Subscription.objects.filter(is_active=True, rucio_subscription="").select_related("owner")
    for subscription in active:
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
