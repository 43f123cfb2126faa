from django.apps import AppConfig


class CampaignsConfig(AppConfig):
    name = "campaigns"
    verbose_name = "Data-challenge campaigns"

    def ready(self) -> None:
        from . import signals  # noqa: F401  (connects the receivers)
