from django.apps import AppConfig


class ReplicasConfig(AppConfig):
    name = "replicas"
    verbose_name = "Data products and replicas"

    def ready(self) -> None:
        from . import signals  # noqa: F401  (connects the transfer-completion receiver)
