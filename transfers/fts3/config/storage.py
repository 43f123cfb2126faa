"""``/config/se``: per-storage limits with FTS3's body ``{storage: {"se_info": {...}, "operations": {...}}}``.

The service caps concurrency per storage element (``inbound_max_active``, ``outbound_max_active``); a null
value leaves a cap as it is (a new row: unset, so the ``*`` row's applies), as FTS3 skips nulls. FTS3's other
storage settings (throughput caps, IPv6, UDT, eviction, TPC mode...) and its staging and deletion limits
mean nothing here: a value for one is refused, naming it, rather than kept and ignored."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from ...models import StorageElementLimit
from ...services.common import enqueue_dispatch
from .fields import ConfigError, body_object, full_clean, integer, storage_element

SUPPORTED = ("inbound_max_active", "outbound_max_active")
# FTS3's t_se columns as its REST API names them (what GET answers with, in its order).
SE_INFO = (
    "inbound_max_active",
    "inbound_max_throughput",
    "outbound_max_active",
    "outbound_max_throughput",
    "udt",
    "ipv6",
    "se_metadata",
    "site",
    "debug_level",
    "skip_eviction",
    "tpc_support",
    "overwrite_disk_enabled",
)
# Also accepted in a POST (FTS3's model has them; its GET does not show them).
_ALSO_ACCEPTED = ("eviction", "storage")
MAX_ACTIVE = 100000


def se_info(row: StorageElementLimit) -> dict[str, Any]:
    return {key: getattr(row, key) if key in SUPPORTED else None for key in SE_INFO}


def _caps(storage: str, info: Any) -> dict[str, int]:
    """The caps a body's ``se_info`` sets (nulls skipped); ConfigError for anything else it sets."""
    if info is None:
        return {}
    if not isinstance(info, dict):
        raise ConfigError(f"{storage}.se_info", "must be an object")
    caps: dict[str, int] = {}
    for key, value in info.items():
        field = f"{storage}.se_info.{str(key)[:80]}"
        if key not in SE_INFO and key not in _ALSO_ACCEPTED:
            raise ConfigError(field, f"unknown field (a storage has {', '.join(SE_INFO)})")
        if value is None:
            continue
        if key not in SUPPORTED:
            raise ConfigError(
                field, "not supported by this service (it caps copies at once per storage, nothing else)"
            )
        caps[key] = integer(value, field, minimum=1, maximum=MAX_ACTIVE)
    return caps


def _operations(storage: str, operations: Any) -> None:
    """FTS3's per-VO staging and deletion limits: this service has neither, so only "no limit" (0 or less,
    which FTS3 takes as removing one) is accepted."""
    if operations is None:
        return
    if not isinstance(operations, dict):
        raise ConfigError(f"{storage}.operations", "must be an object of VO -> {operation: limit}")
    for vo, limits in operations.items():
        if not isinstance(limits, dict):
            raise ConfigError(
                f"{storage}.operations.{str(vo)[:80]}", "must be an object of operation -> limit"
            )
        for op, limit in limits.items():
            field = f"{storage}.operations.{str(vo)[:80]}.{str(op)[:80]}"
            if integer(limit, field, minimum=-(2**31), maximum=2**31 - 1) > 0:
                raise ConfigError(
                    field, "staging and deletion are not offered here (no tape, no deletion jobs)"
                )


@transaction.atomic
def set_se_config(body: Any) -> tuple[dict[str, Any] | None, Any]:
    """Apply a ``POST /config/se`` body: every storage checked first, then all written, or nothing. Returns
    what FTS3 answers: the last storage's ``se_info`` (null if it set none) and its ``operations``."""
    body = body_object(body)
    if not body:
        raise ConfigError("body", "names no storage element")
    changes: list[tuple[str, dict[str, int]]] = []
    for storage, config in body.items():
        # The body's keys are the storage elements: a refused one is named by itself.
        storage_element(storage, str(storage)[:80] or "''")
        if not isinstance(config, dict):
            raise ConfigError(storage, 'must be an object with "se_info" and/or "operations"')
        for key in config:
            if key not in ("se_info", "operations"):
                raise ConfigError(f"{storage}.{str(key)[:80]}", 'unknown field (use "se_info", "operations")')
        _operations(storage, config.get("operations"))
        changes.append((storage, _caps(storage, config.get("se_info"))))
    answer: tuple[dict[str, Any] | None, Any] = (None, None)
    for storage, caps in changes:
        row = None
        if caps:
            row, _ = StorageElementLimit.objects.select_for_update().get_or_create(storage_element=storage)
            for key, value in caps.items():
                setattr(row, key, value)
            full_clean(row, {key: f"{storage}.se_info.{key}" for key in SUPPORTED})
            row.save()
        info = {"storage": storage, **se_info(row)} if row else None
        answer = (info, body[storage].get("operations"))
    enqueue_dispatch()  # a raised cap admits waiting files now
    return answer


def se_configs(storage: str | None = None) -> dict[str, Any]:
    """``GET /config/se[?se=...]``: ``{storage: {"se_info": {...}}}`` (no ``operations``: none are kept)."""
    rows = StorageElementLimit.objects.order_by("storage_element")
    if storage is not None:
        rows = rows.filter(storage_element=storage)
    return {row.storage_element: {"se_info": se_info(row)} for row in rows}


@transaction.atomic
def delete_se_config(storage: str | None) -> None:
    """Remove a storage's caps (FTS3: ``se`` is required; a storage without caps is no error)."""
    if not storage:
        raise ConfigError("se", "Missing storage (se)")
    deleted, _ = StorageElementLimit.objects.filter(storage_element=storage).delete()
    if deleted:
        enqueue_dispatch()
