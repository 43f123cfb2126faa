from django.apps import AppConfig


class ConsistencyConfig(AppConfig):
    name = "consistency"
    verbose_name = "Storage consistency checks"
