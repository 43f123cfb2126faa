"""Which products a rule asks for: one product (its id or DID), or every product matching metadata filters,
among those the account may see (replicas/visibility.py). Errors name the request's field."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.utils.dateparse import parse_datetime

from projects.models import Project
from replicas.choices import ProductType
from replicas.models import DataProduct
from replicas.visibility import visible_products
from srcnet.roles import is_operator
from topology.models import Telescope

FILTER_KEYS = ("telescope", "project", "product_type", "observation_id", "created_after", "created_before")


def select_products(*, user: Any, product: Any = None, filters: Any = None) -> tuple[dict[str, Any], list]:  # type: ignore[type-arg]
    """(the selection as recorded, the selected products) for ``user``; raises ``ValidationError``."""
    if (product in (None, "")) == (not filters):
        raise ValidationError({"product": "Give either one product or metadata filters (not both)."})
    if product not in (None, ""):
        found = _one_product(user, product)
        return {"product": found.did}, [found]
    if not isinstance(filters, dict):
        raise ValidationError({"filters": f"An object with some of: {', '.join(FILTER_KEYS)}."})
    unknown = sorted(set(filters) - set(FILTER_KEYS))
    if unknown:
        raise ValidationError(
            {f"filters.{unknown[0]}": f"Not a filter; filters are {', '.join(FILTER_KEYS)}."}
        )
    queryset = filtered_products(user, filters)
    rows = list(queryset.order_by("created", "id")[:10_001])
    if not rows:
        raise ValidationError({"filters": "No product you may see matches these filters."})
    return {"filters": {k: str(v) for k, v in filters.items()}}, rows


def _one_product(user: Any, value: Any) -> DataProduct:
    visible = visible_products(user)
    text = str(value)
    scope, _, name = text.partition(":")
    if name:
        found = visible.filter(scope=scope, name=name).first()
    elif text.isdigit() and len(text) < 19:
        found = visible.filter(pk=int(text)).first()
    else:
        raise ValidationError({"product": "A product id or a DID (scope:name)."})
    if found is None:
        # Hidden products are named as unknown ones: a rule must not reveal what the account may not see.
        raise ValidationError({"product": f"No product {text[:100]!r} that you may see."})
    return found


def filtered_products(
    user: Any, filters: dict[str, Any], *, members_only: bool = False
) -> QuerySet[DataProduct]:
    """The products ``user`` may see that match ``filters``; raises ``ValidationError`` naming the filter.
    A project the user is not in is refused, unless some of its products are public already (their
    proprietary period is over) and ``members_only`` is False: those, and only those, may be asked for."""
    queryset = visible_products(user)
    if "telescope" in filters:
        if not Telescope.objects.filter(name=str(filters["telescope"])).exists():
            raise ValidationError({"filters.telescope": f"No telescope {str(filters['telescope'])[:64]!r}."})
        queryset = queryset.filter(telescope__name=str(filters["telescope"]))
    if "project" in filters:
        code = str(filters["project"])
        project = Project.objects.filter(code=code).first()
        member = project is not None and (is_operator(user) or project.members.filter(pk=user.pk).exists())
        released = project is not None and not members_only and queryset.filter(project=project).exists()
        if not (member or released):
            # Refused like an unknown project: its code is not a secret, its proprietary data is.
            raise ValidationError(
                {"filters.project": f"You are not a member of a project {code[:40]!r} with data you may see."}
            )
        queryset = queryset.filter(project=project)
    if "product_type" in filters:
        kind = str(filters["product_type"])
        if kind not in ProductType.values:
            raise ValidationError({"filters.product_type": f"One of {', '.join(ProductType.values)}."})
        queryset = queryset.filter(product_type=kind)
    if "observation_id" in filters:
        queryset = queryset.filter(observation_id=str(filters["observation_id"])[:64])
    for key, lookup in (("created_after", "created__gte"), ("created_before", "created__lt")):
        if key in filters:
            queryset = queryset.filter(**{lookup: _instant(key, filters[key])})
    return queryset


def _instant(key: str, value: Any) -> dt.datetime:
    parsed = parse_datetime(str(value)) if isinstance(value, str) else None
    if parsed is None:
        raise ValidationError({f"filters.{key}": "An ISO 8601 time, e.g. 2026-11-01T00:00:00Z."})
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed
