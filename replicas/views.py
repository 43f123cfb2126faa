"""Portal pages of products and replicas."""

from django.contrib.auth.decorators import login_required
from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse

from replicas.visibility import visible_products
from srcnet.views import Column, object_list
from transfers.models import TransferFile

from . import filtersets
from .choices import ReplicaState
from .models import DataProduct, Replica
from .selectors import product_files


@login_required
def products(request: HttpRequest) -> HttpResponse:
    queryset = visible_products(
        request.user,
        DataProduct.objects.select_related("telescope", "project").prefetch_related(
            "files", Prefetch("replicas", queryset=Replica.objects.select_related("endpoint"))
        ),
    )
    return object_list(
        request,
        title="Data products",
        queryset=queryset,
        filterset_class=filtersets.DataProductFilterSet,
        columns=[
            Column("Product", lambda p: p.did, link=lambda p: reverse("replicas:product", args=[p.pk])),
            Column("Telescope", lambda p: p.telescope),
            Column("Project", lambda p: p.project or ""),
            Column("State", lambda p: p.get_state_display()),
            Column("Bytes", lambda p: p.size_bytes),
            Column(
                "Replicas", lambda p: ", ".join(f"{r.endpoint.name} ({r.state})" for r in p.replicas.all())
            ),
            Column("Created", lambda p: p.created.strftime("%Y-%m-%d %H:%M:%S")),
        ],
    )


@login_required
def product(request: HttpRequest, pk: int) -> HttpResponse:
    """A product's routing: where each replica is, which policy placed it and why, its transfers with
    timings, and (for operators) the actions on it."""
    from operations.models import AuditEvent

    # Another project's proprietary product is a 404, as if it did not exist (replicas/visibility.py).
    item = get_object_or_404(
        visible_products(request.user, DataProduct.objects.select_related("telescope", "source", "project")),
        pk=pk,
    )
    from schedulers.arrivals import copy_arrivals

    replicas = list(
        item.replicas.select_related("endpoint__site", "policy", "upstream__endpoint__site").prefetch_related(
            "copy_requests"
        )
    )
    # Each copy still to come: when it is predicted to arrive and why not sooner.
    found = copy_arrivals(replicas)
    for r in replicas:
        r.arrival = found.get(r.pk)  # type: ignore[attr-defined]
    transfers = (
        TransferFile.objects.filter(product_files(item))
        .select_related("job")
        .order_by("job__created", "start_time", "id")
    )
    events = AuditEvent.objects.filter(target_type="product", target_id=str(item.pk))[:20]
    return render(
        request,
        "replicas/product.html",
        {
            "product": item,
            "replicas": replicas,
            "transfers": transfers,
            "events": events,
            "can_reroute": any(r.state in (ReplicaState.PLANNED, ReplicaState.COPYING) for r in replicas),
        },
    )
