"""Checks shared by the configuration bodies: every refusal names the field it is about."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import models


class ConfigError(ValueError):
    """A configuration the service refuses, naming the field (``status``: 400, or 404 for a missing name)."""

    def __init__(self, field: str, message: str, status: int = 400) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.status = status


def shown(value: Any) -> str:
    """A value as a message quotes it: bounded (bodies come from anyone holding the role)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def integer(value: Any, field: str, *, minimum: int, maximum: int) -> int:
    """An integer in [minimum, maximum]. FTS3 also takes one written as a string ("25"); JSON true is refused
    (Python counts it as 1, FTS3's type check lets it through, and it is never meant as a number)."""
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(field, f"must be an integer, got {shown(value)}")
    if not minimum <= value <= maximum:
        raise ConfigError(field, f"must be from {minimum} to {maximum}, got {value}")
    return value


def storage_element(value: Any, field: str) -> str:
    """``*`` or the storage element (``scheme://host:port``) of a registered storage endpoint: a limit on
    storage nobody registered would never apply to anything, so it is refused rather than kept."""
    from topology.services.storage_urls import known_storage_element

    if not isinstance(value, str) or not value:
        raise ConfigError(field, f"must be '*' or a storage element (scheme://host:port), got {shown(value)}")
    if len(value) > 255 or not known_storage_element(value):
        raise ConfigError(
            field,
            f"{shown(value)} is neither '*' nor the storage element (scheme://host:port) of a registered "
            "storage endpoint",
        )
    return value


def body_object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ConfigError("body", "must be a JSON object")
    return body


def full_clean(row: models.Model, fields: dict[str, str]) -> None:
    """The model's own invariants, as every write path runs them; a violation named as the body names its
    field (``fields``: model field -> body field)."""
    try:
        row.full_clean()
    except ValidationError as exc:
        field, messages = next(iter(exc.message_dict.items()))
        raise ConfigError(fields.get(field, field), " ".join(messages)) from exc
