"""Helpers shared by the transfer services."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction


def transfer_settings() -> dict[str, Any]:
    return settings.SRCNET_TRANSFERS


def enqueue_dispatch(countdown: float = 0.0) -> None:
    """Ask a worker to dispatch (after the current transaction commits, if any)."""
    from ..tasks import dispatch

    transaction.on_commit(lambda: dispatch.apply_async(countdown=countdown))
