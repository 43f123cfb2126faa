"""Which products, replicas and transfers a user may see: the one rule every surface applies (REST API,
portal, CLI through the API, the platform's transfer API and the FTS3 endpoint's job listing).

Operators see everything. Any other account sees a product that has no project (observatory data), whose
proprietary period is over, or whose project it is a member of."""

from __future__ import annotations

from typing import Any

from django.db import models
from django.db.models import Q, QuerySet
from django.utils import timezone

from projects.models import Project
from srcnet.roles import is_operator

from .models import DataProduct


def product_condition(user: Any, prefix: str = "") -> Q:
    """The filter of the products ``user`` may see, on a queryset whose product is reached by ``prefix``
    (``""`` on products, ``"product__"`` on replicas). Everything for an operator."""
    if is_operator(user):
        return Q()
    mine = (
        Project.objects.filter(members=user).values("pk") if user.is_authenticated else Project.objects.none()
    )
    return (
        Q(**{f"{prefix}project__isnull": True})
        | Q(**{f"{prefix}proprietary_until__isnull": True})
        | Q(**{f"{prefix}proprietary_until__lte": timezone.now()})
        | Q(**{f"{prefix}project__in": mine})
    )


def visible_products(user: Any, queryset: QuerySet | None = None) -> QuerySet:  # type: ignore[type-arg]
    return (queryset if queryset is not None else DataProduct.objects.all()).filter(product_condition(user))


def hidden_products(user: Any) -> QuerySet | None:  # type: ignore[type-arg]
    """The products ``user`` may not see; None for an operator (nothing hidden). Records that name a
    product by its DID or its id are filtered against this one query."""
    if is_operator(user):
        return None
    return DataProduct.objects.exclude(product_condition(user))


def hidden_dids(user: Any) -> QuerySet | None:  # type: ignore[type-arg]
    """The DIDs ("scope:name") of the products ``user`` may not see, for filtering transfer jobs by their
    ``metadata.product``; None for an operator."""
    hidden = hidden_products(user)
    if hidden is None:
        return None
    from django.db.models import Value
    from django.db.models.functions import Concat

    return hidden.annotate(did_text=Concat("scope", Value(":"), "name")).values("did_text")


def visible_jobs(user: Any, queryset: QuerySet, job_prefix: str = "") -> QuerySet:  # type: ignore[type-arg]
    """Transfer jobs (or, with ``job_prefix="job__"``, files) that ``user`` may see: those that move a
    product ``user`` may see (the job's ``metadata.product``, which every push job carries), and jobs of no
    product (an FTS3 client's own submission: Rucio's conveyor, a service, an operator) only when ``user``
    submitted them. Everything for an operator."""
    from django.db.models.fields.json import KeyTextTransform

    hidden = hidden_dids(user)
    if hidden is None:
        return queryset
    no_product = Q(product_did__isnull=True) | Q(product_did="")
    own = Q(**{f"{job_prefix}submitter": user}) if user.is_authenticated else Q(pk__in=[])
    return queryset.alias(product_did=KeyTextTransform("product", f"{job_prefix}metadata")).filter(
        (no_product & own) | (~no_product & ~Q(product_did__in=hidden))
    )


def visible_events(user: Any, queryset: QuerySet) -> QuerySet:  # type: ignore[type-arg]
    """Audit events without those about a product ``user`` may not see: the product's own events
    (``target_type`` product, its id in ``target_id``) and the events of the jobs that move it (their
    ``details.product``), and other accounts' token events (which name a token and the address it was made
    from)."""
    hidden_rows = hidden_products(user)
    if hidden_rows is None:
        return queryset
    from django.db.models.fields.json import KeyTextTransform
    from django.db.models.functions import Cast

    hidden = hidden_rows.annotate(id_text=Cast("pk", output_field=models.CharField())).values("id_text")
    dids = hidden_dids(user)
    return (
        queryset.exclude(target_type="product", target_id__in=hidden)
        .exclude(Q(target_type="token") & ~Q(user_id=getattr(user, "pk", None)))
        .alias(product_did=KeyTextTransform("product", "details"))
        .filter(Q(product_did__isnull=True) | ~Q(product_did__in=dids))
    )


def hidden_did_set(user: Any) -> frozenset[str]:
    """The DIDs of the products ``user`` may not see, as a set: for records that name products in JSON (the
    push loop's cycles, the plan preview). Empty for an operator."""
    hidden = hidden_dids(user)
    return frozenset() if hidden is None else frozenset(hidden.values_list("did_text", flat=True))
