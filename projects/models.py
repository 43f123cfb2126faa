"""Observing projects (proposals): who may see and ask for a product while it is proprietary."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MaxValueValidator, RegexValidator
from django.db import models

code_validator = RegexValidator(
    r"^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$", "A project code: up to 40 letters, digits, '.', '-' or '_'."
)


class Project(models.Model):
    """An observing proposal. Its products are proprietary to its members for ``proprietary_days`` after
    they are registered (each product records its own end, which an operator may change); then public."""

    code = models.CharField(max_length=40, unique=True, validators=[code_validator])
    title = models.CharField(max_length=200, blank=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="projects", blank=True)
    proprietary_days = models.PositiveIntegerField(
        default=365,
        validators=[MaxValueValidator(3650)],
        help_text="Days a new product of the project stays visible to its members only (0: public at once)",
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["code"]

    def __str__(self) -> str:
        return self.code
