from django.apps import AppConfig


class ReplicasConfig(AppConfig):
    name = "replicas"
    verbose_name = "Data products and replicas"

    def ready(self) -> None:
        from . import rucio_membership, signals  # noqa: F401  (connect the transfer-completion and project
        # membership receivers)
