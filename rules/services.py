"""Writes of the rules app: make a rule (embedded: replicas the push loop plans; Rucio mode: a Rucio rule
per product under the user's own Rucio account) and remove one. Every check runs before anything is written,
and the writes are one transaction: a refused rule (by the platform or by Rucio) leaves nothing behind."""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from srcnet.roles import role_of

from . import embedded
from .choices import USER_ACTIVITY, limits_for
from .models import Rule
from .selection import select_products
from .targets import resolve_destinations

# The longest lifetime anyone may give (an operator's rule may also have none: for ever); it keeps the
# expiry a date the database and Rucio can hold.
LONGEST_EVER_SECONDS = 100 * 365 * 86400


class RucioUnavailable(Exception):
    """Rucio mode, but Rucio could not be asked (down, refused the platform's login): nothing was made."""


def through_rucio() -> bool:
    """Rucio mode: a Rucio server is configured (``SRCNET_RUCIO_URL``, as for following rules)."""
    return bool(os.environ.get("SRCNET_RUCIO_URL"))


def _checked_limits(
    *, user: Any, copies: Any, priority: Any, activity: Any, lifetime: Any, expires_at: Any, now: dt.datetime
) -> tuple[int, int, str, dt.datetime | None]:
    """(copies, priority, activity, expiry) within what the user's role allows; every bad field at once."""
    limits = limits_for(role_of(user))
    errors: dict[str, str] = {}
    if not isinstance(copies, int) or isinstance(copies, bool) or not 1 <= copies <= limits.max_copies:
        errors["copies"] = f"A whole number from 1 to {limits.max_copies} for your role."
    if (
        not isinstance(priority, int)
        or isinstance(priority, bool)
        or not 1 <= priority <= limits.max_priority
    ):
        errors["priority"] = f"A whole number from 1 to {limits.max_priority} for your role."
    if activity not in limits.activities:
        errors["activity"] = f"One of {', '.join(limits.activities)} for your role."
    expiry: dt.datetime | None = None
    longest = None if limits.max_lifetime_days is None else dt.timedelta(days=limits.max_lifetime_days)
    if lifetime is not None and expires_at is not None:
        errors["lifetime"] = "Give a lifetime or an expiry time, not both."
    elif lifetime is not None:
        if not isinstance(lifetime, int) or isinstance(lifetime, bool) or lifetime <= 0:
            errors["lifetime"] = "A positive number of seconds (a lifetime cannot end in the past)."
        elif lifetime > LONGEST_EVER_SECONDS:
            errors["lifetime"] = "At most 100 years."
        elif longest is not None and lifetime > longest.total_seconds():
            errors["lifetime"] = f"At most {limits.max_lifetime_days} days for your role."
        else:
            expiry = now + dt.timedelta(seconds=lifetime)
    elif expires_at is not None:
        if not isinstance(expires_at, dt.datetime):
            errors["expires_at"] = "An ISO 8601 time."
        elif expires_at <= now:
            errors["expires_at"] = "The expiry time is in the past."
        elif longest is not None and expires_at - now > longest:
            errors["expires_at"] = f"At most {limits.max_lifetime_days} days ahead for your role."
        else:
            expiry = expires_at
    elif longest is not None:
        expiry = now + longest  # a scientist's rule without a lifetime lives as long as the role allows
    if errors:
        raise ValidationError(errors)
    return copies, priority, str(activity), expiry


def lock_owner(owner: Any) -> None:
    """Hold ``owner``'s row until the transaction ends: two requests of one account counting its rules or
    subscriptions at once would otherwise both find room for one more."""
    from django.contrib.auth import get_user_model

    list(get_user_model().objects.select_for_update().filter(pk=owner.pk).values_list("pk", flat=True))


def within_quota(owner: Any, field: str, held: Any, most: int) -> None:
    """Refuse (a 400 naming ``field``) one more of what ``owner`` holds ``held.count()`` of, past ``most``;
    called inside the transaction that makes it, with the owner's row locked first so that two requests of
    one account cannot both find the last place."""
    lock_owner(owner)
    count = held.count()
    if count >= most:
        raise ValidationError(
            {field: f"You hold {count} {field}, the most your role may hold ({most}): remove the ones you "
             "no longer need first."}
        )  # fmt: skip


def create_rule(
    *,
    owner: Any,
    product: Any = None,
    filters: Any = None,
    rse_expression: Any = None,
    srcs: Any = None,
    copies: Any = 1,
    activity: Any = USER_ACTIVITY,
    priority: Any = 3,
    lifetime: Any = None,
    expires_at: Any = None,
    comment: str = "",
) -> Rule:
    """Check everything, then make the rule; raises ``ValidationError`` naming the field (nothing made) or
    ``RucioUnavailable``."""
    now = timezone.now()
    copies, priority, activity, expiry = _checked_limits(
        user=owner,
        copies=copies,
        priority=priority,
        activity=activity,
        lifetime=lifetime,
        expires_at=expires_at,
        now=now,
    )
    selection, products = select_products(user=owner, product=product, filters=filters)
    most = limits_for(role_of(owner)).max_products
    if len(products) > most:
        raise ValidationError(
            {
                "filters": f"{len(products) if len(products) <= 10_000 else 'over 10000'} products match; "
                f"one rule of your role asks for at most {most}: narrow the filters."
            }
        )
    expression, destinations = resolve_destinations(rse_expression=rse_expression, srcs=srcs)
    if copies > len(destinations):
        raise ValidationError(
            {
                "copies": f"{copies} copies asked for, but {expression[:80]!r} matches "
                f"{len(destinations)} SRC storage endpoint(s): {', '.join(d.name for d in destinations)}."
            }
        )
    with transaction.atomic():
        live = Rule.objects.filter(owner=owner).filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
        within_quota(owner, "rules", live, limits_for(role_of(owner)).max_live_rules)
        rule = Rule.objects.create(
            owner=owner,
            selection=selection,
            rse_expression=expression,
            destinations=[d.name for d in destinations],
            copies=copies,
            activity=activity,
            priority=priority,
            expires_at=expiry,
            comment=str(comment or "")[:200],
        )
        rule.products.add(*products)
        if through_rucio():
            _make_in_rucio(rule, products, destinations, now)
        else:
            embedded.place_rule(rule, products, destinations)
    if not through_rucio():
        from schedulers.services import request_push_cycle

        request_push_cycle()  # once the rule commits: its copies need not wait for the beat's next cycle
    return rule


def _make_in_rucio(rule: Rule, products: list, destinations: list, now: dt.datetime) -> None:  # type: ignore[type-arg]
    from replicas.rucio import RucioAdapter, RucioAdapterError
    from replicas.rucio_accounts import RuleRefused, add_user_rules, ensure_account
    from replicas.rucio_sync import rse_expression

    try:
        adapter = RucioAdapter.from_env()
        account = ensure_account(adapter, rule.owner, [d.name for d in destinations])
        lifetime = None if rule.expires_at is None else max(1, int((rule.expires_at - now).total_seconds()))
        rule.rucio_rules = add_user_rules(
            adapter,
            products=products,
            account=account,
            # The storage the platform matched, named one by one: Rucio cannot pick an RSE it does not know.
            rse_expression=rse_expression([d.name for d in destinations]),
            copies=rule.copies,
            lifetime=lifetime,
            activity=rule.activity,
            priority=rule.priority,
            comment=f"rule {rule.pk} of {rule.owner.get_username()}",
        )
    except RuleRefused as exc:
        raise ValidationError({exc.field: str(exc)}) from exc
    except RucioAdapterError as exc:
        raise RucioUnavailable(str(exc)) from exc
    rule.rucio_account = account
    rule.save(update_fields=["rucio_account", "rucio_rules"])


@transaction.atomic
def remove_rule(*, rule: Rule) -> None:
    """Remove the rule: its Rucio rules (Rucio mode), or the copies only it wanted that have not started
    (embedded). Copies on their way or made stay; the platform deletes no data."""
    rule = Rule.objects.select_for_update().get(pk=rule.pk)
    if rule.rucio_rules:
        from replicas.rucio import RucioAdapter, RucioAdapterError
        from replicas.rucio_accounts import delete_rules

        try:
            delete_rules(RucioAdapter.from_env(), rule.rucio_rules.values())
        except RucioAdapterError as exc:
            raise RucioUnavailable(str(exc)) from exc
    else:
        embedded.release_rule(rule)
    rule.delete()
