"""Starting consistency checks: on demand (CLI, API, portal) and on the schedule."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from replicas.models import Replica
from topology.models import StorageEndpoint

from .choices import CheckMode, CheckState, FindingAction, FindingKind
from .models import ConsistencyCheck, Finding

# Ten years: a longer grace period would leave no file dark, and the seconds must fit the database's column.
MAX_GRACE_HOURS = 87600.0


def consistency_settings() -> dict[str, Any]:
    return dict(settings.SRCNET_CONSISTENCY)


def _fraction(value: Any) -> float:
    try:
        fraction = float(value)
    except (TypeError, ValueError):
        raise ValidationError({"checksum_fraction": "A number from 0 to 1."}) from None
    if not 0.0 <= fraction <= 1.0:
        raise ValidationError({"checksum_fraction": f"{fraction} is not from 0 to 1."})
    return fraction


def _grace(value: Any) -> int:
    try:
        hours = float(value)
    except (TypeError, ValueError):
        raise ValidationError({"dark_grace_hours": "A number of hours, 0 or more."}) from None
    if not 0.0 <= hours <= MAX_GRACE_HOURS:  # (NaN is neither)
        raise ValidationError({"dark_grace_hours": f"{hours} is not from 0 to {MAX_GRACE_HOURS:g} hours."})
    return round(hours * 3600)


def running_check(endpoint: StorageEndpoint) -> ConsistencyCheck | None:
    """The endpoint's check still running, if one is (not one whose worker died: STALE_HOURS)."""
    stale = timezone.now() - dt.timedelta(hours=float(consistency_settings()["STALE_HOURS"]))
    return endpoint.consistency_checks.filter(state=CheckState.RUNNING, started__gte=stale).first()


@transaction.atomic
def start_check(
    endpoint_name: Any,
    *,
    mode: Any = None,
    checksum_fraction: Any = None,
    dark_grace_hours: Any = None,
    user: Any = None,
) -> ConsistencyCheck:
    """A new check of the endpoint named ``endpoint_name`` (a registered, active storage endpoint), queued
    for a worker; the settings' defaults for what is not given. One check per endpoint at a time. A
    person's request (``user``) is audited; the schedule's is not."""
    defaults = consistency_settings()
    endpoint = (
        StorageEndpoint.objects.select_for_update().filter(name=str(endpoint_name), is_active=True).first()
    )
    if endpoint is None:
        raise ValidationError({"endpoint": f"{endpoint_name!r} is no active storage endpoint."})
    mode = defaults["MODE"] if mode in (None, "") else mode
    if mode not in CheckMode.values:
        raise ValidationError({"mode": f"{mode!r} is not one of {', '.join(CheckMode.values)}."})
    fraction = _fraction(
        defaults["CHECKSUM_FRACTION"] if checksum_fraction in (None, "") else checksum_fraction
    )
    grace = _grace(defaults["DARK_GRACE_HOURS"] if dark_grace_hours in (None, "") else dark_grace_hours)
    running = running_check(endpoint)
    if running is not None:
        raise ValidationError({"endpoint": f"{endpoint.name} is being checked already (check {running.pk})."})
    check = ConsistencyCheck.objects.create(
        endpoint=endpoint,
        mode=mode,
        checksum_fraction=fraction,
        dark_grace_seconds=grace,
        requested_by=getattr(user, "username", "") or "",
    )
    if user is not None:
        from operations.choices import AuditAction, TargetType
        from operations.services import record_event

        record_event(
            user=user,
            action=AuditAction.CHECK_STORAGE,
            target_type=TargetType.STORAGE,
            target_id=endpoint.pk,
            target=endpoint.name,
            details={
                "check": check.pk,
                "mode": mode,
                "checksum_fraction": fraction,
                "dark_grace_seconds": grace,
            },
        )
    from .tasks import run_consistency_check

    transaction.on_commit(lambda: run_consistency_check.delay(check.pk))
    return check


def due_endpoints(now: dt.datetime | None = None) -> list[StorageEndpoint]:
    """Active endpoints whose last check ended (or started) more than PERIOD_HOURS ago, or never ran."""
    now = now or timezone.now()
    since = now - dt.timedelta(hours=float(consistency_settings()["PERIOD_HOURS"]))
    due = []
    for endpoint in StorageEndpoint.objects.filter(is_active=True).order_by("name"):
        last = endpoint.consistency_checks.exclude(state=CheckState.FAILED).order_by("-started").first()
        if (last is None or last.started < since) and running_check(endpoint) is None:
            due.append(endpoint)
    return due


@transaction.atomic
def act_on_dark_file(finding_id: Any, *, remove: bool, user: Any) -> Finding:
    """An operator's decision on a dark file: removed from its storage, or kept; either is audited. Refused
    (a ValidationError naming the field) for anything but a dark finding not yet acted on, and for a file
    the platform has come to know since the check (a replica of it made meanwhile)."""
    from operations.choices import AuditAction, TargetType
    from operations.services import record_event
    from transfers.executor import remove_file

    try:
        finding = (
            Finding.objects.select_for_update().select_related("check_run__endpoint").get(pk=int(finding_id))
        )
    except (TypeError, ValueError, Finding.DoesNotExist):
        raise ValidationError({"finding": f"{finding_id!r} is no finding."}) from None
    if finding.kind != FindingKind.DARK:
        raise ValidationError({"finding": f"finding {finding.pk} is {finding.kind}, not a dark file."})
    if finding.action:
        raise ValidationError({"finding": f"finding {finding.pk} was acted on already ({finding.action})."})
    endpoint = finding.check_run.endpoint
    if _known_now(endpoint, finding.path):
        raise ValidationError({"finding": f"{finding.path} is a replica's file at {endpoint.name} now."})
    outcome = "kept"
    if remove:
        outcome = remove_file(endpoint.url(endpoint.tpc_scheme, finding.path))
        if outcome not in ("removed", "absent"):
            raise ValidationError(
                {"finding": f"{finding.path} at {endpoint.name} was not removed: {outcome}"}
            )
    finding.action = FindingAction.REMOVED if remove else FindingAction.KEPT
    finding.acted = timezone.now()
    finding.save(update_fields=["action", "acted"])
    record_event(
        user=user,
        action=AuditAction.REMOVE_DARK_FILE if remove else AuditAction.KEEP_DARK_FILE,
        target_type=TargetType.STORAGE_FILE,
        target_id=finding.pk,
        target=f"{endpoint.name}:{finding.path}",
        details={"check": finding.check_run_id, "size": finding.found_size, "outcome": outcome},
    )
    return finding


def _known_now(endpoint: StorageEndpoint, path: str) -> bool:
    scope, _, rest = path.partition("/")
    name, _, file_name = rest.rpartition("/")
    return Replica.objects.filter(
        endpoint=endpoint, product__scope=scope, product__name=name, product__files__name=file_name
    ).exists()
