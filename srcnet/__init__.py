"""The SRCNet control plane: settings, URL root, Celery app, shared base classes and the portal shell."""

from .celery import app as celery_app

__all__ = ["celery_app"]
