"""The Celery application: the Redis broker, tasks discovered in every app's ``tasks.py``. Any module may
import it to send a task by name; the worker's start-up hooks, which need the apps, are ``srcnet.celery``'s
(the composition root that ``celery -A srcnet`` loads)."""

import functools
import os
from typing import Any

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "srcnet.settings")

app = Celery("srcnet")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@functools.cache
def broker_redis() -> Any:
    """This process's client of the broker's Redis, for what the platform keeps beside the queues (the
    dispatch's mark, the workers' task metrics). One a process: redis-py's pool reconnects after a fork."""
    import redis
    from django.conf import settings

    return redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=2.0, socket_connect_timeout=2.0)
