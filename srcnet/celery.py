"""The Celery application as ``celery -A srcnet`` runs it: the app (``srcnet.task_queue``) and the worker's
start-up hooks, which need the platform's apps (this module is the composition root's, not the apps')."""

from celery.signals import task_postrun, task_prerun, worker_init
from django.db import close_old_connections

from .task_queue import app

__all__ = ["app"]


@worker_init.connect
def _refuse_to_start_without_tokens(**_: object) -> None:
    """A worker that could not get its copies' tokens would fail every copy: it does not start, and says
    which setting to change (transfers/checks.py)."""
    from transfers.checks import token_problems

    problems = token_problems()
    if problems:
        lines = [
            f"{setting}: {message}" + (f" (fix: {fix})" if fix else "") for setting, message, fix in problems
        ]
        raise SystemExit("the worker does not start: " + "; ".join(lines))


@worker_init.connect
def _record_task_metrics(**_: object) -> None:
    """Workers record their task runs for /metrics (monitoring/worker_metrics.py)."""
    from monitoring import worker_metrics

    worker_metrics.connect()


@task_prerun.connect
@task_postrun.connect
def _keep_usable_connections(sender: object = None, **_: object) -> None:
    """Around each task, a database connection past CONN_MAX_AGE, broken (the database restarted) or left in
    a transaction is closed, and the next use of a kept one is health-checked first (CONN_HEALTH_CHECKS): the
    request cycle's rule, which Celery's fix-up replaces by closing every connection unless
    CELERY_DB_REUSE_MAX is set (settings). Not for a task run eagerly, inside its caller's transaction."""
    if not getattr(getattr(sender, "request", None), "is_eager", False):
        close_old_connections()
