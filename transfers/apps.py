from django.apps import AppConfig


class TransfersConfig(AppConfig):
    name = "transfers"
    verbose_name = "Transfers"

    def ready(self) -> None:
        from . import checks  # noqa: F401  (registers the token settings' start-up check)
