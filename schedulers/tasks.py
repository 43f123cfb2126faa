"""Celery tasks of the push scheduler (thin: they call the loop and the measurement recorder)."""

from __future__ import annotations

from celery import shared_task
from django.db import OperationalError


@shared_task(
    name="schedulers.push_cycle", autoretry_for=(OperationalError,), retry_backoff=True, max_retries=3
)
def push_cycle() -> int:
    """One pass of the push loop, or one more after the cycle running now (cycle_requests.py); returns how
    many jobs this task's cycle submitted."""
    from .cycle_requests import run_coalesced
    from .loop import push_cycle, push_cycle_unless_running

    return run_coalesced(push_cycle_unless_running, push_cycle)


@shared_task(name="schedulers.run_simulation", acks_late=True)
def run_simulation(simulation_id: int) -> str:
    """Run one API-requested simulation; a redelivered message finds it no longer queued and stops."""
    from .services import run_requested_simulation

    return run_requested_simulation(simulation_id)


@shared_task(name="schedulers.poll_external_jobs", autoretry_for=(OperationalError,), max_retries=3)
def poll_external_jobs() -> int:
    """Settle the replicas of jobs an external FTS3 ended (nothing to do with the embedded service)."""
    from .external import poll_external_jobs as poll

    return len(poll().settled)
