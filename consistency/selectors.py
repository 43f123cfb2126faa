"""What the metrics and the portal read of the consistency checks."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db.models import Exists, Max, Min, OuterRef
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
    (none completed in twice the period, though checks have been asked for longer than that). A fixed
    number of queries however many endpoints and checks (the metrics read it at every scrape)."""
    now = now or timezone.now()
    period = dt.timedelta(hours=float(consistency_settings()["PERIOD_HOURS"]))
    checks = ConsistencyCheck.objects.all()
    last = {
        c.endpoint_id: c
        for c in checks.filter(finished__isnull=False)
        .exclude(state=CheckState.FAILED)
        .order_by("endpoint_id", "-finished")
        .distinct("endpoint_id")
    }
    complete = dict(
        checks.filter(state=CheckState.COMPLETE)
        .values("endpoint_id")
        .annotate(at=Max("finished"))
        .values_list("endpoint_id", "at")
    )
    first = dict(checks.values("endpoint_id").annotate(at=Min("started")).values_list("endpoint_id", "at"))
    out = []
    for pk, name in StorageEndpoint.objects.filter(is_active=True).order_by("name").values_list("pk", "name"):
        last_complete = complete.get(pk)
        started = first.get(pk)
        overdue = (
            started is not None
            and started < now - 2 * period
            and (last_complete is None or last_complete < now - 2 * period)
        )
        out.append(EndpointConsistency(name, last.get(pk), last_complete, overdue))
    return out


def products_without_good_replica() -> int:
    """Products with no replica available, planned or being copied: nothing good left, nothing coming."""
    good = Replica.objects.filter(
        product=OuterRef("pk"),
        state__in=(ReplicaState.AVAILABLE, ReplicaState.PLANNED, ReplicaState.COPYING),
    )
    return DataProduct.objects.filter(~Exists(good)).count()
