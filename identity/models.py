"""Failed sign-ins, kept for the length of the limits' window (``identity.limits``)."""

from __future__ import annotations

from django.db import models


class SignInPlace(models.TextChoices):
    PORTAL = "portal", "the portal's login page"
    ADMIN = "admin", "the admin site's login page"
    API_TOKEN = "api-token", "the REST API's token endpoint"


class SignInFailure(models.Model):
    """One password that did not match (or an account that does not exist), from an address. The password
    itself is never kept."""

    at = models.DateTimeField(db_index=True)
    address = models.GenericIPAddressField()
    username = models.CharField(max_length=150)  # as typed, lower-cased
    place = models.CharField(max_length=16, choices=SignInPlace.choices)

    class Meta:
        indexes = [models.Index(fields=["address", "username", "at"]), models.Index(fields=["address", "at"])]
        ordering = ["-at"]

    def __str__(self) -> str:
        return f"{self.username} from {self.address} at {self.place}, {self.at:%Y-%m-%d %H:%M:%S}"
