"""Serializer base classes shared by every app."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers


class ValidatedModelSerializer(serializers.ModelSerializer):
    """Runs the model's ``full_clean()`` on every write, so the API enforces the same invariants as
    the admin, the portal and the importers (one rule, enforced everywhere)."""

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs = super().validate(attrs)
        model: Any = self.Meta.model
        many_to_many = {f.name for f in model._meta.many_to_many}
        plain = {k: v for k, v in attrs.items() if k not in many_to_many}
        if self.instance is not None:
            instance = model.objects.get(pk=self.instance.pk)
            for key, value in plain.items():
                setattr(instance, key, value)
        else:
            instance = model(**plain)
        try:
            instance.full_clean(exclude=list(many_to_many))
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.message_dict) from exc
        return attrs


class LookupSlugField(serializers.SlugRelatedField):
    """A relation written by a slug that is looked up as given: a value PostgreSQL cannot hold in a text
    parameter (a NUL character) is an invalid value (400 naming the field), not a database error (500;
    the API fuzzer's telescope "...\x00..." on POST /api/replicas/products/)."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, str) and "\x00" in data:
            self.fail("invalid")
        return super().to_internal_value(data)


def name_field(queryset: Any, **kwargs: Any) -> serializers.SlugRelatedField:
    """A relation written and read by the related object's name."""
    return LookupSlugField(slug_field="name", queryset=queryset, **kwargs)
