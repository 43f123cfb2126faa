"""What the metrics and the portal read of the consistency checks."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db.models import Exists, OuterRef
from django.utils import timezone

from replicas.choices import ReplicaState
from replicas.models import DataProduct, Replica
from topology.models import StorageEndpoint

from .choices import CheckState
from .models import ConsistencyCheck
from .services import consistency_settings


@dataclass(frozen=True)
class EndpointConsistency:
    endpoint: str
    last: ConsistencyCheck | None  # the last check that ended (complete or incomplete)
    last_complete: dt.datetime | None
    overdue: bool


def endpoint_consistency(now: dt.datetime | None = None) -> list[EndpointConsistency]:
    """Per active endpoint: its last ended check, when a check last completed, and whether one is overdue
    (none completed in twice the period, though checks have been asked for longer than that)."""
    now = now or timezone.now()
    period = dt.timedelta(hours=float(consistency_settings()["PERIOD_HOURS"]))
    out = []
    for endpoint in StorageEndpoint.objects.filter(is_active=True).order_by("name"):
        checks = endpoint.consistency_checks.all()
        ended = checks.filter(finished__isnull=False).exclude(state=CheckState.FAILED)
        last = ended.order_by("-finished").first()
        complete = checks.filter(state=CheckState.COMPLETE).order_by("-finished").first()
        first = checks.order_by("started").first()
        last_complete = complete.finished if complete is not None else None
        overdue = (
            first is not None
            and first.started < now - 2 * period
            and (last_complete is None or last_complete < now - 2 * period)
        )
        out.append(EndpointConsistency(endpoint.name, last, last_complete, overdue))
    return out


def products_without_good_replica() -> int:
    """Products with no replica available, planned or being copied: nothing good left, nothing coming."""
    good = Replica.objects.filter(
        product=OuterRef("pk"),
        state__in=(ReplicaState.AVAILABLE, ReplicaState.PLANNED, ReplicaState.COPYING),
    )
    return DataProduct.objects.filter(~Exists(good)).count()
