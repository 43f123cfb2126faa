from django.apps import AppConfig


class SchedulersConfig(AppConfig):
    name = "schedulers"
    verbose_name = "Push scheduling"

    def ready(self) -> None:
        from . import signals  # noqa: F401  (records lane throughput when push jobs end)
