from django.apps import AppConfig


class SchedulersConfig(AppConfig):
    name = "schedulers"
    verbose_name = "Push scheduling"
