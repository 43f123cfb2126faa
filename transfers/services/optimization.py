"""Running the optimizer over the links that have work, and recording its decisions."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Avg, Count, Q, Sum
from django.utils import timezone

from ..choices import AttemptState, FileState, OptimizerMode
from ..models import LinkLimit, OptimizerDecision, TransferAttempt, TransferFile
from ..optimizer import LinkWindow, decide
from ..scheduling import most_specific


def _window_for(average_seconds: float | None) -> timedelta:
    # FTS3: 5 min for short copies, 15 min up to 15 min copies, else 30 min.
    if average_seconds is None or average_seconds < 30:
        return timedelta(minutes=5)
    return timedelta(minutes=15) if average_seconds < 900 else timedelta(minutes=30)


def optimize_links(now=None) -> list[OptimizerDecision]:  # type: ignore[no-untyped-def]
    """One optimizer round for every link under an optimizer mode that has active or queued files."""
    now = now or timezone.now()
    rows = {
        (r.source_se, r.dest_se): r for r in LinkLimit.objects.exclude(optimizer_mode=OptimizerMode.FIXED)
    }
    if not rows:
        return []
    busy = (
        TransferFile.objects.filter(state__in=(FileState.ACTIVE, FileState.SUBMITTED))
        .order_by()  # the model's default ordering would make DISTINCT see more columns
        .values_list("source_se", "dest_se")
        .distinct()
    )
    decisions = []
    for source_se, dest_se in busy:
        config = most_specific(source_se, dest_se, rows)
        if not isinstance(config, LinkLimit):
            continue
        decisions.append(optimize_link(source_se, dest_se, config, now))
    return decisions


def optimize_link(source_se: str, dest_se: str, config: LinkLimit, now) -> OptimizerDecision:  # type: ignore[no-untyped-def]
    link = TransferFile.objects.filter(source_se=source_se, dest_se=dest_se)
    average = link.filter(state=FileState.FINISHED).aggregate(a=Avg("duration_seconds"))["a"]
    window = _window_for(average)
    since = now - window
    moved = (
        link.filter(state=FileState.FINISHED, finish_time__gte=since).aggregate(b=Sum("transferred_bytes"))[
            "b"
        ]
        or 0
    )
    ended = TransferAttempt.objects.filter(
        file__source_se=source_se, file__dest_se=dest_se, finished__gte=since
    ).aggregate(total=Count("id"), ok=Count("id", filter=Q(state=AttemptState.SUCCEEDED)))
    success = 100.0 * ended["ok"] / ended["total"] if ended["total"] else None
    counts = link.aggregate(
        queued=Count("id", filter=Q(state=FileState.SUBMITTED)),
        active=Count("id", filter=Q(state=FileState.ACTIVE)),
    )
    previous = OptimizerDecision.objects.filter(source_se=source_se, dest_se=dest_se).first()
    decision = decide(
        LinkWindow(
            current=previous.active if previous else None,
            min_active=config.min_active,
            max_active=config.max_active,
            mode=config.optimizer_mode,
            throughput_bps=moved * 8 / window.total_seconds(),
            success_rate=success,
            previous_ema_bps=previous.ema_bps if previous else 0.0,
            queued=counts["queued"],
            active=counts["active"],
        )
    )
    return OptimizerDecision.objects.create(
        source_se=source_se,
        dest_se=dest_se,
        active=decision.active,
        ema_bps=decision.ema_bps,
        throughput_bps=moved * 8 / window.total_seconds(),
        success_rate=success,
        queued=counts["queued"],
        rationale=decision.rationale,
    )
