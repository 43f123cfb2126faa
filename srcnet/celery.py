"""The Celery application: Redis broker, tasks discovered in every app's ``tasks.py``."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "srcnet.settings")

app = Celery("srcnet")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
