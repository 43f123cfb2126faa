"""The plan behind the FTS3 jobs Rucio's conveyor submits for the push loop's rules.

In Rucio mode (``SRCNET_PUSH_THROUGH=rucio``) a due leg becomes a Rucio rule, and the conveyor submits its
FTS3 jobs (one per file by default) with Rucio's metadata: the file's scope and DID name
(``<product>/<file>``) and the destination RSE, but not the plan's lane, rate, streams or predicted arrival
that a push job carries. The push loop keeps those in ``schedulers.PlannedRule``; here the jobs' transfer
rows find their plan by (scope, product, RSE). A rule counts once, however many of its files' jobs are in
flight, as a push job counts once however many files it has. Jobs of rules the push loop did not make (a
scientist's) have no plan: they count in the path and site metrics (transfer rows), not in the planned
ones. A fixed number of queries whatever the rows (ADR 0003): two for the rules in flight, three for
the arrivals."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import CharField, F, Func, Max, Q, Value
from django.db.models.fields.json import KT

from schedulers.models import PlannedRule
from transfers.choices import JobState
from transfers.models import TransferFile

IN_FLIGHT_JOBS = (JobState.SUBMITTED, JobState.ACTIVE)

Key = tuple[str, str, str]  # (scope, product name, RSE)


@dataclass(frozen=True)
class RuleInFlight:
    """A push-loop rule with at least one file's job in flight at the transfer service."""

    plan: PlannedRule


@dataclass(frozen=True)
class RuleArrival:
    """A push-loop rule whose last job finished in the window, none in flight any more."""

    plan: PlannedRule
    finished: datetime


def _rucio_copies(job_filter: Q) -> dict[Key, datetime | None]:
    """(scope, product, RSE) of the files Rucio submitted in the jobs ``job_filter`` selects (jobs without
    the push loop's lane, files with Rucio's ``dst_rse``), with the latest finish of their jobs."""
    product = Func(
        KT("metadata__name"), Value("/"), Value(1), function="split_part", output_field=CharField()
    )
    rows = (
        TransferFile.objects.filter(job_filter, metadata__has_key="dst_rse")
        .exclude(job__metadata__has_key="lane")
        .annotate(scope=KT("metadata__scope"), product=product, rse=KT("metadata__dst_rse"))
        .values("scope", "product", "rse")
        .annotate(last=Max(F("job__finished")))
        .order_by()
    )
    return {(r["scope"], r["product"], r["rse"]): r["last"] for r in rows}


def _plans(keys: set[Key]) -> dict[Key, PlannedRule]:
    """The latest plan of each key (a product placed again at an RSE has a newer one)."""
    if not keys:
        return {}
    found: dict[Key, PlannedRule] = {}
    candidates = PlannedRule.objects.filter(
        rse__in={k[2] for k in keys}, product__name__in={k[1] for k in keys}
    ).select_related("product")
    for plan in candidates.order_by("created", "id"):
        key = (plan.product.scope, plan.product.name, plan.rse)
        if key in keys:
            found[key] = plan
    return found


def rules_in_flight() -> list[RuleInFlight]:
    copies = _rucio_copies(Q(job__state__in=IN_FLIGHT_JOBS))
    return [RuleInFlight(plan) for plan in _plans(set(copies)).values()]


def rule_arrivals(since: datetime) -> list[RuleArrival]:
    """Rules whose files' jobs finished since ``since`` and have no job in flight: the product arrived."""
    finished = _rucio_copies(Q(job__state=JobState.FINISHED, job__finished__gte=since))
    waiting = set(_rucio_copies(Q(job__state__in=IN_FLIGHT_JOBS)))
    arrived = {key: last for key, last in finished.items() if key not in waiting and last is not None}
    return [RuleArrival(plan, arrived[key]) for key, plan in _plans(set(arrived)).items()]
