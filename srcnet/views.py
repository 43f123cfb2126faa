"""Portal shell: the home page and a generic filtered list page the apps' pages are built from."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from srcnet.roles import is_operator


@dataclass(frozen=True)
class Column:
    """A table column: its header and how to read the cell from a row."""

    header: str
    value: Callable[[Any], Any]
    link: Callable[[Any], str] | None = None


def object_list(
    request: HttpRequest,
    *,
    title: str,
    queryset: QuerySet,
    filterset_class: Any,
    columns: Sequence[Column],
    per_page: int = 50,
) -> HttpResponse:
    """A list page using the same FilterSet as the REST endpoint, so both show the same rows."""
    filterset = filterset_class(request.GET, queryset=queryset)
    page = Paginator(filterset.qs, per_page).get_page(request.GET.get("page"))
    rows = [[(col.value(obj), col.link(obj) if col.link else None) for col in columns] for obj in page]
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "srcnet/object_list.html",
        {
            "title": title,
            "filterset": filterset,
            "headers": [c.header for c in columns],
            "rows": rows,
            "page": page,
            "query": query.urlencode(),
        },
    )


@login_required
def home(request: HttpRequest) -> HttpResponse:
    from replicas.models import DataProduct
    from topology.models import Link, NetworkPath, Site
    from transfers.choices import FileState
    from transfers.models import TransferFile

    counts = {
        "sites": Site.objects.count(),
        "links": Link.objects.count(),
        "paths": NetworkPath.objects.count(),
        "products": DataProduct.objects.count(),
        "active transfers": TransferFile.objects.filter(state=FileState.ACTIVE).count(),
        "finished transfers": TransferFile.objects.filter(state=FileState.FINISHED).count(),
        "failed transfers": TransferFile.objects.filter(state=FileState.FAILED).count(),
    }
    return render(request, "srcnet/home.html", {"counts": counts, "api_docs": reverse("api-docs")})


def operator_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Operators (srcnet.roles) act; other users get 403 (for GET and POST alike); anonymous users log in
    first."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not is_operator(request.user):
            raise PermissionDenied("Only operators may do this.")
        return view(request, *args, **kwargs)

    return wrapper
