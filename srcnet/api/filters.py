"""Filter fields shared by every app's filter sets."""

from __future__ import annotations

from datetime import UTC, datetime

import django_filters
from django import forms
from django.core.exceptions import ValidationError


class UtcIsoDateTimeField(forms.DateTimeField):
    """An ISO 8601 time, handed to the database in UTC. PostgreSQL refuses offsets past ±15:59 that Python
    accepts (up to ±23:59); an out-of-range instant is a 400 naming the parameter, never a server error."""

    def to_python(self, value: object) -> datetime | None:  # type: ignore[override]
        parsed = django_filters.fields.IsoDateTimeField().to_python(value)
        if parsed is None:
            return None
        try:
            return parsed.astimezone(UTC)
        except (OverflowError, ValueError) as exc:
            raise ValidationError("The time is out of range.", code="invalid") from exc


class UtcIsoDateTimeFilter(django_filters.IsoDateTimeFilter):
    field_class = UtcIsoDateTimeField
