"""``/config/activity_shares``: the weights by which a link's slots are shared among activities, one set per
VO with FTS3's body ``{"vo", "share", "active"}``.

This service serves one VO (``SRCNET_FTS3_VO``): another is refused, naming ``vo``. A POST replaces the
whole set, as FTS3 stores it as one value; ``share`` may be ``{"A": 80, "B": 20}`` or FTS3's older
``[{"A": 80}, {"B": 20}]``. FTS3 can keep a set switched off (``"active": false``); here a set is applied
while it exists, so ``false`` is refused (DELETE the VO's shares to stop sharing)."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.db import transaction

from ...models import ActivityShare
from ...services.common import enqueue_dispatch
from .fields import ConfigError, body_object, shown

FIELDS = ("vo", "share", "active")
MAX_SHARE_JSON = 1024  # FTS3's column holds the set's JSON in 1024 characters
MAX_ACTIVITY = 64  # ActivityShare.activity


def service_vo() -> str:
    return str(getattr(settings, "SRCNET_FTS3_VO", "ska"))


def _number(weight: float) -> float | int:
    """A weight as it was most likely given: 80, not 80.0."""
    return int(weight) if float(weight).is_integer() else weight


def shares_dict() -> dict[str, float | int]:
    return {s.activity: _number(s.weight) for s in ActivityShare.objects.order_by("activity")}


def _normalized(share: Any) -> list[tuple[str, float]]:
    if isinstance(share, dict):
        entries = [{k: v} for k, v in share.items()]
    elif isinstance(share, list):
        entries = share
    else:
        raise ConfigError("share", f"must be an object of activity -> weight, got {shown(share)}")
    pairs: list[tuple[str, float]] = []
    for entry in entries:
        if not isinstance(entry, dict) or len(entry) != 1:
            raise ConfigError(
                "share", f"each entry of a list must be one {{activity: weight}}, got {shown(entry)}"
            )
        ((activity, weight),) = entry.items()
        field = f"share.{str(activity)[:80]}"
        if not activity or len(activity) > MAX_ACTIVITY:
            raise ConfigError(field, f"an activity name has 1 to {MAX_ACTIVITY} characters")
        if isinstance(weight, bool) or not isinstance(weight, int | float) or weight != weight:
            raise ConfigError(field, f"Share weight must be a number, got {shown(weight)}")
        if weight < 0 or weight > 1e9:
            raise ConfigError(field, f"a weight is from 0 to 1e9, got {weight}")
        pairs.append((activity, float(weight)))
    names = [a for a, _ in pairs]
    if len(set(names)) != len(names):
        raise ConfigError("share", "names an activity twice")
    if len(json.dumps([{a: w} for a, w in pairs])) > MAX_SHARE_JSON:
        raise ConfigError("share", f"too long: FTS3 keeps at most {MAX_SHARE_JSON} characters of it")
    return pairs


@transaction.atomic
def set_activity_shares(body: Any) -> dict[str, Any]:
    """Replace the VO's shares from a ``POST /config/activity_shares`` body; FTS3's answer (the stored
    row: ``vo``, ``activity_share`` as its list, ``active``)."""
    body = body_object(body)
    for key in body:
        if key not in FIELDS:
            raise ConfigError(str(key)[:80], f"unknown field (use {', '.join(FIELDS)})")
    vo = body.get("vo")
    if not vo:
        raise ConfigError("vo", "Missing VO")
    if vo != service_vo():
        raise ConfigError("vo", f"this service serves the VO {service_vo()!r} only, got {shown(vo)}")
    if not body.get("share"):
        raise ConfigError("share", "Missing share")
    active = body.get("active", True)
    if active is not True:
        raise ConfigError(
            "active",
            "only true: a share set applies while it exists here (DELETE /config/activity_shares/{vo} "
            f"to stop sharing), got {shown(active)}",
        )
    pairs = _normalized(body["share"])
    ActivityShare.objects.all().delete()
    ActivityShare.objects.bulk_create([ActivityShare(activity=a, weight=w) for a, w in pairs])
    enqueue_dispatch()
    return {"vo": vo, "activity_share": [{a: _number(w)} for a, w in pairs], "active": True}


def activity_shares() -> dict[str, Any]:
    """``GET /config/activity_shares``: ``{vo: {"share": {...}, "active": true}}``, empty without shares."""
    shares = shares_dict()
    return {service_vo(): {"share": shares, "active": True}} if shares else {}


def vo_shares(vo: str) -> dict[str, Any]:
    shares = shares_dict() if vo == service_vo() else {}
    if not shares:
        raise ConfigError("vo", f"No activity shares for {vo[:80]}", status=404)
    return {"share": shares, "active": True}


@transaction.atomic
def delete_activity_shares(vo: str) -> None:
    vo_shares(vo)  # 404 when there is nothing to delete, as FTS3 answers
    ActivityShare.objects.all().delete()
    enqueue_dispatch()
