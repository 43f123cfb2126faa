from typing import Any

from django.apps import AppConfig
from django.core import checks


class SchedulersConfig(AppConfig):
    name = "schedulers"
    verbose_name = "Push scheduling"

    def ready(self) -> None:
        from . import signals  # noqa: F401  (records lane throughput when push jobs end)

        checks.register(_plan_settings_check)


def _plan_settings_check(**kwargs: Any) -> list[checks.CheckMessage]:
    """``manage.py check`` (and migrate, the web server's start) names a bad SRCNET_PLAN_* setting before the
    first push cycle trips on it."""
    from django.core.exceptions import ImproperlyConfigured

    from .plan_settings import plan_config

    try:
        plan_config()
    except ImproperlyConfigured as exc:
        return [checks.Error(str(exc), id="schedulers.E001")]
    return []
