"""The Celery application: the Redis broker, tasks discovered in every app's ``tasks.py``. Any module may
import it to send a task by name; the worker's start-up hooks, which need the apps, are ``srcnet.celery``'s
(the composition root that ``celery -A srcnet`` loads)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "srcnet.settings")

app = Celery("srcnet")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
