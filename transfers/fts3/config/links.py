"""``/config/links``: a link's limits by its symbolic name, with FTS3's fields and semantics.

As in FTS3, a POST names the link by ``symbolicname`` (required); the row of that name is updated, else the
row of the same source and destination (it takes the new name, as FTS3's merge on the pair does), else a row
is made (``source``/``destination`` default to ``*``, ``min_active``/``max_active`` to 2). Only the fields
given change. Unlike FTS3, ``min_active <= max_active`` is checked on the row as it will be, not on the
body with FTS3's defaults filled in, and null values are refused as FTS3's type check refuses them."""

from __future__ import annotations

import re
from typing import Any

from django.db import IntegrityError, transaction

from ...choices import OptimizerMode
from ...models import LinkLimit
from ...services.common import enqueue_dispatch
from .fields import ConfigError, body_object, full_clean, integer, shown, storage_element

# FTS3's t_link_config columns, as its REST API names them.
FIELDS = (
    "symbolicname",
    "source",
    "destination",
    "min_active",
    "max_active",
    "optimizer_mode",
    "tcp_buffer_size",
    "nostreams",
    "no_delegation",
)
MAX_ACTIVE = 10000  # LinkLimit's own bound
MAX_STREAMS = 64
DEFAULT_ACTIVE = 2  # FTS3's default for a new link given no min_active or max_active
# One URL path segment (GET/DELETE /config/links/{name}), printable.
_NAME = re.compile(r"^[^/\\\s\x00-\x1f\x7f]{1,255}$")


def link_dict(row: LinkLimit) -> dict[str, Any]:
    """The link as FTS3 answers it."""
    return {
        "symbolicname": row.symbolicname,
        "source": row.source_se,
        "destination": row.dest_se,
        "min_active": row.min_active,
        "max_active": row.max_active,
        "optimizer_mode": row.optimizer_mode,
        # Neither is stored: copies here size their own TCP buffers, and nothing is ever delegated.
        "tcp_buffer_size": None,
        "nostreams": row.nostreams,
        "no_delegation": False,
    }


def _symbolicname(value: Any) -> str:
    if not value:
        raise ConfigError("symbolicname", "is required (FTS3 names every link configuration)")
    if not isinstance(value, str) or not _NAME.match(value):
        raise ConfigError(
            "symbolicname",
            f"must be 1-255 printable characters without '/', '\\' or spaces, got {shown(value)}",
        )
    return value


def _no_delegation(value: Any) -> None:
    # Copies run with the service's own credentials: there is no delegation to turn off, either way is true.
    if not isinstance(value, bool) and value not in ("on", "off", "true", "false", "yes", "no"):
        raise ConfigError("no_delegation", f"must be true or false, got {shown(value)}")


def _tcp_buffer_size(value: Any) -> None:
    if integer(value, "tcp_buffer_size", minimum=0, maximum=2**31 - 1) != 0:
        raise ConfigError(
            "tcp_buffer_size",
            "not supported (copies here are root:// or davs://, whose clients size their own TCP buffers): "
            "give 0 or leave it out",
        )


@transaction.atomic
def set_link_config(body: Any) -> LinkLimit:
    """Create or change one link from a ``POST /config/links`` body; ConfigError naming the field, and
    nothing written, for anything this service cannot honour."""
    body = body_object(body)
    for key, value in body.items():
        if key not in FIELDS:
            raise ConfigError(str(key)[:80], f"unknown field (a link has {', '.join(FIELDS)})")
        if value is None:
            raise ConfigError(key, "must not be null (leave the field out to keep its value)")
    name = _symbolicname(body.get("symbolicname"))
    row = LinkLimit.objects.select_for_update().filter(symbolicname=name).first()
    source = storage_element(body.get("source", row.source_se if row else "*"), "source")
    destination = storage_element(body.get("destination", row.dest_se if row else "*"), "destination")
    same_pair = LinkLimit.objects.select_for_update().filter(source_se=source, dest_se=destination).first()
    if row is None:
        row = same_pair or LinkLimit(min_active=DEFAULT_ACTIVE, max_active=DEFAULT_ACTIVE)
    elif same_pair is not None and same_pair.pk != row.pk:
        raise ConfigError(
            "source",
            f"{source} -> {destination} is configured already, as the link {same_pair.symbolicname!r}",
        )
    stored = _stored(row)
    row.symbolicname, row.source_se, row.dest_se = name, source, destination
    if "min_active" in body:
        row.min_active = integer(body["min_active"], "min_active", minimum=1, maximum=MAX_ACTIVE)
    if "max_active" in body:
        row.max_active = integer(body["max_active"], "max_active", minimum=1, maximum=MAX_ACTIVE)
    if row.min_active > row.max_active:
        raise ConfigError("max_active", f"{row.max_active} is lower than min_active {row.min_active}")
    if "optimizer_mode" in body:
        row.optimizer_mode = integer(
            body["optimizer_mode"],
            "optimizer_mode",
            minimum=OptimizerMode.FIXED,
            maximum=OptimizerMode.AGGRESSIVE,
        )
    if "nostreams" in body:
        # 0: the protocol's default number of streams, as in FTS3.
        row.nostreams = integer(body["nostreams"], "nostreams", minimum=0, maximum=MAX_STREAMS)
    if "tcp_buffer_size" in body:
        _tcp_buffer_size(body["tcp_buffer_size"])
    if "no_delegation" in body:
        _no_delegation(body["no_delegation"])
    if stored is not None and _stored(row) == stored:
        # Nothing changes: nothing written and no dispatch asked. The push loop sets each lane's link as
        # it submits a product there (schedulers/enforcement.py), mostly as it already is: at a file rate
        # the save, its unique checks and the dispatch ask were four round trips a product.
        return row
    # The model's own checks too (a pair configured twice is its constraint's, reported on the source).
    full_clean(row, {"source_se": "source", "dest_se": "destination", "__all__": "source"})
    try:
        with transaction.atomic():
            row.save()
    except IntegrityError as exc:  # a concurrent POST took the name or the pair first
        raise ConfigError(
            "symbolicname", f"{name!r} or its pair was configured meanwhile: try again"
        ) from exc
    # A raised limit admits waiting files now rather than at the next sweep.
    enqueue_dispatch()
    return row


def _stored(row: LinkLimit) -> tuple[Any, ...] | None:
    """What a saved row holds of the fields a POST may change (None for a row not saved yet)."""
    if row.pk is None:
        return None
    return (
        row.symbolicname,
        row.source_se,
        row.dest_se,
        row.min_active,
        row.max_active,
        row.optimizer_mode,
        row.nostreams,
    )


def get_link_config(name: str) -> LinkLimit:
    row = LinkLimit.objects.filter(symbolicname=name).first()
    if row is None:
        raise ConfigError("symbolicname", f"Link {name[:80]} does not exist", status=404)
    return row


def link_configs() -> list[LinkLimit]:
    return list(LinkLimit.objects.order_by("symbolicname"))


@transaction.atomic
def delete_link_config(name: str) -> bool:
    """Remove the link of that name (its traffic falls back to the next most specific row); as FTS3, a name
    that does not exist is no error. True if a row went."""
    deleted, _ = LinkLimit.objects.filter(symbolicname=name).delete()
    if deleted:
        enqueue_dispatch()
    return bool(deleted)
