from django.apps import AppConfig


class IdentityConfig(AppConfig):
    name = "identity"
    verbose_name = "Sign-in"

    def ready(self) -> None:
        from . import signals  # noqa: F401  (connects the receivers of Django's sign-in signals)
