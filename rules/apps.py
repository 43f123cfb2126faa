from django.apps import AppConfig


class RulesConfig(AppConfig):
    name = "rules"
    verbose_name = "Scientists' rules"

    def ready(self) -> None:
        from . import signals  # noqa: F401  (new products are offered to the subscriptions)
