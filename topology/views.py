"""Portal pages of the topology: the same querysets and filters as the REST API."""

from django.contrib.auth.decorators import login_required
from django.db.models import Prefetch
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from srcnet.views import Column, object_list

from . import filtersets
from .models import Link, NetworkPath, PathHop, Site, StorageEndpoint
from .physics import tcp_ceiling_bps
from .yamlio import format_rate

WINDOW = 2**30


@login_required
def sites(request: HttpRequest) -> HttpResponse:
    return object_list(
        request,
        title="Sites",
        queryset=Site.objects.select_related("vrf"),
        filterset_class=filtersets.SiteFilterSet,
        columns=[
            Column("Name", lambda s: s.name),
            Column("Kind", lambda s: s.get_kind_display()),
            Column("Region", lambda s: s.get_region_display()),
            Column("Country", lambda s: s.country),
            Column("VRF", lambda s: s.vrf or ""),
        ],
    )


@login_required
def links(request: HttpRequest) -> HttpResponse:
    return object_list(
        request,
        title="Links",
        queryset=Link.objects.select_related("a_end", "b_end"),
        filterset_class=filtersets.LinkFilterSet,
        columns=[
            Column("Name", lambda lk: lk.name),
            Column("A", lambda lk: lk.a_end),
            Column("B", lambda lk: lk.b_end),
            Column("Kind", lambda lk: lk.get_kind_display()),
            Column("Capacity", lambda lk: format_rate(lk.capacity_bps) + "bit/s"),
            Column("RTT ms", lambda lk: lk.rtt_ms),
            Column("Owner", lambda lk: lk.owner),
            Column("Up", lambda lk: "yes" if lk.is_up else "no"),
        ],
    )


@login_required
def paths(request: HttpRequest) -> HttpResponse:
    queryset = NetworkPath.objects.select_related("source", "destination", "vrf").prefetch_related(
        Prefetch("hops", queryset=PathHop.objects.select_related("link").order_by("position"))
    )
    return object_list(
        request,
        title="Network paths",
        queryset=queryset,
        filterset_class=filtersets.NetworkPathFilterSet,
        columns=[
            Column("From", lambda p: p.source),
            Column("To", lambda p: p.destination),
            Column("RTT ms", lambda p: f"{p.rtt_ms:.1f}"),
            Column("Bottleneck", lambda p: format_rate(p.capacity_bps) + "bit/s"),
            Column(
                "Per-flow ceiling (1 GiB)", lambda p: format_rate(tcp_ceiling_bps(WINDOW, p.rtt_ms)) + "bit/s"
            ),
            Column("VRF", lambda p: p.vrf or ""),
            Column("Links", lambda p: " → ".join(h.link.name for h in p.hops.all())),
        ],
    )


@login_required
def storage(request: HttpRequest) -> HttpResponse:
    return object_list(
        request,
        title="Storage endpoints",
        queryset=StorageEndpoint.objects.select_related("site"),
        filterset_class=filtersets.StorageEndpointFilterSet,
        columns=[
            Column("Name", lambda e: e.name),
            Column("Site", lambda e: e.site),
            Column("Role", lambda e: e.get_role_display()),
            Column("TPC URL", lambda e: e.tpc_url("")),
            Column("Active", lambda e: e.is_active),
        ],
    )


@login_required
def network_map(request: HttpRequest) -> HttpResponse:
    """The world map of sites and links; its data comes from the operations JSON endpoints. With
    ``?product=<id>``, the path its copies take is highlighted (``operations.product_route``), for a
    product the user may see (another project's proprietary product is a 404)."""
    route = None
    if "product" in request.GET:
        from operations.product_route import product_route
        from replicas.models import DataProduct
        from replicas.visibility import visible_products

        pk = request.GET["product"]
        if not pk.isdigit():
            raise Http404("No such product.")
        product = get_object_or_404(
            visible_products(request.user, DataProduct.objects.select_related("source")), pk=int(pk)
        )
        route = product_route(product)
    return render(request, "topology/map.html", {"route": route})
