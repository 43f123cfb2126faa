from django.apps import AppConfig


class IdentityConfig(AppConfig):
    name = "identity"
    verbose_name = "Sign-in"

    def ready(self) -> None:
        # Django's sign-in signals' receivers, and the schema extension of the token authentication.
        from . import schema, signals  # noqa: F401
