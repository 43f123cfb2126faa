"""Celery tasks of the consistency checks."""

from __future__ import annotations

from celery import shared_task
from django.core.exceptions import ValidationError


@shared_task(name="consistency.run_check")
def run_consistency_check(check_id: int) -> dict[str, object]:
    """Run one queued check (``services.start_check``) to its end."""
    from django.utils import timezone

    from .checker import run_check
    from .choices import CheckState
    from .models import ConsistencyCheck

    waiting = ConsistencyCheck.objects.filter(pk=check_id, state=CheckState.RUNNING, claimed__isnull=True)
    if waiting.update(claimed=timezone.now()) != 1:
        return {"skipped": f"check {check_id} is not waiting to run"}
    check = run_check(ConsistencyCheck.objects.select_related("endpoint").get(pk=check_id))
    return {
        "check": check.pk,
        "state": check.state,
        "lost": check.lost,
        "corrupt": check.corrupt,
        "dark": check.dark,
    }


@shared_task(name="consistency.schedule_checks")
def schedule_checks() -> dict[str, object]:
    """A check of every active endpoint that is due (``services.due_endpoints``)."""
    from .services import due_endpoints, start_check

    started, refused = [], []
    for endpoint in due_endpoints():
        try:
            started.append(start_check(endpoint.name).pk)
        except ValidationError as exc:
            refused.append(f"{endpoint.name}: {exc}")
    return {"started": started, "refused": refused}
