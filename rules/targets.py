"""Where a rule may put copies: the SRC disk storage the platform knows, named by an RSE expression or by
SRC names. Each endpoint has the attributes the Rucio adapter gives its RSE, so an expression means the same
set here as in Rucio."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.core.exceptions import ValidationError

from topology.choices import StorageRole
from topology.models import RegionalCentre, StorageEndpoint

from .expression import ExpressionError, evaluate


def known_rses() -> dict[str, dict[str, str]]:
    """Every active storage endpoint the platform knows, with its RSE attributes."""
    return {
        e.name: {"site": e.site.name, "country": e.site.country, "region": e.site.region, "role": e.role}
        for e in StorageEndpoint.objects.filter(is_active=True).select_related("site")
    }


def resolve_destinations(
    *, rse_expression: Any = None, srcs: Any = None
) -> tuple[str, list[StorageEndpoint]]:
    """(the expression as recorded, the SRC disk endpoints it selects, by name); raises ``ValidationError``
    naming ``rse_expression`` or ``srcs``."""
    if (rse_expression in (None, "")) == (not srcs):
        raise ValidationError({"rse_expression": "Give either an RSE expression or SRC names (srcs)."})
    if srcs:
        return _named_srcs(srcs)
    text = str(rse_expression)
    rses = known_rses()
    try:
        matched = evaluate(text, rses)
    except ExpressionError as exc:
        raise ValidationError({"rse_expression": f"Cannot read {text[:80]!r}: {exc}."}) from exc
    disks = sorted(n for n in matched if rses[n]["role"] == StorageRole.DISK)
    if not disks:
        also = f" (it matches only {', '.join(sorted(matched))}, not SRC disk storage)" if matched else ""
        raise ValidationError({"rse_expression": f"{text[:80]!r} matches no SRC storage{also}."})
    return text, list(StorageEndpoint.objects.filter(name__in=disks).select_related("site").order_by("name"))


def _named_srcs(srcs: Any) -> tuple[str, list[StorageEndpoint]]:
    if not isinstance(srcs, Sequence) or isinstance(srcs, str) or not all(isinstance(s, str) for s in srcs):
        raise ValidationError({"srcs": 'A list of SRC names, e.g. ["AUSRC"].'})
    if len(srcs) > 50:
        raise ValidationError({"srcs": "At most 50 SRCs."})
    endpoints = []
    for name in dict.fromkeys(srcs):
        centre = RegionalCentre.objects.filter(name=name, is_distribution_centre=False).first()
        if centre is None:
            raise ValidationError({"srcs": f"No SKA Regional Centre {name[:64]!r}."})
        disk = StorageEndpoint.objects.filter(site=centre, role=StorageRole.DISK, is_active=True).first()
        if disk is None:
            raise ValidationError({"srcs": f"{name} has no active SRC disk storage."})
        endpoints.append(disk)
    endpoints.sort(key=lambda e: e.name)
    return "|".join(e.name for e in endpoints), endpoints
