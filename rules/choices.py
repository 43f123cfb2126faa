"""Enumerations of the rules app, and what each role may ask for."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import models

from srcnet.roles import Role


class RuleState(models.TextChoices):
    """A rule's state, named as Rucio names it (a platform rule in Rucio mode is a Rucio rule)."""

    REPLICATING = "REPLICATING", "Replicating"
    OK = "OK", "Every copy is there"
    STUCK = "STUCK", "A copy failed"
    EXPIRED = "EXPIRED", "Its lifetime is over"


USER_ACTIVITY = "SKA User Request"


@dataclass(frozen=True)
class RoleLimits:
    """What one role may ask for in a rule."""

    max_priority: int
    max_copies: int
    max_lifetime_days: int | None  # None: a rule may live for ever
    activities: tuple[str, ...]
    max_products: int
    # What one account may hold at once: its live rules (not yet expired; a subscription's rules count,
    # they are the owner's) and its subscriptions. A rule or subscription over the quota is a 400 naming it.
    max_live_rules: int
    max_subscriptions: int


# A scientist asks for data for an analysis: at the default push priority at most (3; a telescope's push
# is not overtaken by a request for a copy), for a year at most, under the user activity (its FTS3 and
# Rucio share). Operators may place for good, at any priority and under the observatory's activities.
LIMITS = {
    Role.SCIENTIST: RoleLimits(
        max_priority=3,
        max_copies=3,
        max_lifetime_days=365,
        activities=(USER_ACTIVITY, "SKA Reprocessing"),
        max_products=200,
        max_live_rules=500,
        max_subscriptions=20,
    ),
    Role.OPERATOR: RoleLimits(
        max_priority=5,
        max_copies=10,
        max_lifetime_days=None,
        activities=(
            USER_ACTIVITY,
            "SKA Reprocessing",
            "SKA Data Products",
            "SKA Data Challenge",
            "SKA Calibration",
        ),
        max_products=2000,
        max_live_rules=100_000,
        max_subscriptions=500,
    ),
}


def limits_for(role: Role) -> RoleLimits:
    return LIMITS[min(role, Role.OPERATOR)] if role >= Role.SCIENTIST else LIMITS[Role.SCIENTIST]
