"""REST endpoints of the topology."""

from __future__ import annotations

from django.db.models import Prefetch
from django.http import HttpResponse
from drf_spectacular.utils import OpenApiTypes, extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import api_view, parser_classes, permission_classes
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser
from rest_framework.request import Request
from rest_framework.response import Response

from srcnet.api.parsers import BoundedJSONParser
from srcnet.api.permissions import ReadAnyAuthenticatedWriteStaff, TokenScoped

from .. import filtersets
from ..models import (
    Dtn,
    Link,
    NetworkPath,
    PathHop,
    PointOfPresence,
    RegionalCentre,
    Site,
    StorageEndpoint,
    Telescope,
    Vrf,
)
from ..services.exporter import export_topology
from ..services.importer import import_topology
from ..yamlio import MAX_FILE_BYTES, TopologyFileError, decode
from . import serializers as s


class PlainTextParser(BaseParser):
    """Topology files are posted as YAML text."""

    media_type = "*/*"

    def parse(self, stream, media_type=None, parser_context=None):  # type: ignore[no-untyped-def]
        # At most the limit and one byte are read: a huge body is refused without being held whole.
        data = stream.read(MAX_FILE_BYTES + 1) if stream is not None else b""
        try:
            return decode(data, "the request body")
        except TopologyFileError as exc:
            raise ParseError(str(exc)) from exc


class VrfViewSet(viewsets.ModelViewSet):
    queryset = Vrf.objects.select_related("parent")
    serializer_class = s.VrfSerializer
    filterset_class = filtersets.VrfFilterSet
    ordering_fields = ["name", "scope"]


class SiteViewSet(viewsets.ReadOnlyModelViewSet):
    """Every node of the graph, whatever its kind."""

    queryset = Site.objects.select_related("vrf")
    serializer_class = s.SiteSerializer
    filterset_class = filtersets.SiteFilterSet
    ordering_fields = ["name", "kind", "region"]


class TelescopeViewSet(viewsets.ModelViewSet):
    queryset = Telescope.objects.select_related("vrf")
    serializer_class = s.TelescopeSerializer
    filterset_class = filtersets.TelescopeFilterSet


class RegionalCentreViewSet(viewsets.ModelViewSet):
    queryset = RegionalCentre.objects.select_related("vrf")
    serializer_class = s.RegionalCentreSerializer
    filterset_class = filtersets.RegionalCentreFilterSet
    ordering_fields = ["name", "share_weight"]


class PointOfPresenceViewSet(viewsets.ModelViewSet):
    queryset = PointOfPresence.objects.select_related("vrf")
    serializer_class = s.PointOfPresenceSerializer
    filterset_class = filtersets.PointOfPresenceFilterSet


class StorageEndpointViewSet(viewsets.ModelViewSet):
    queryset = StorageEndpoint.objects.select_related("site")
    serializer_class = s.StorageEndpointSerializer
    filterset_class = filtersets.StorageEndpointFilterSet


class DtnViewSet(viewsets.ModelViewSet):
    queryset = Dtn.objects.select_related("site")
    serializer_class = s.DtnSerializer
    filterset_class = filtersets.DtnFilterSet


class LinkViewSet(viewsets.ModelViewSet):
    queryset = Link.objects.select_related("a_end", "b_end").prefetch_related("vrfs")
    serializer_class = s.LinkSerializer
    filterset_class = filtersets.LinkFilterSet
    ordering_fields = ["name", "capacity_bps", "rtt_ms"]


class NetworkPathViewSet(viewsets.ModelViewSet):
    queryset = NetworkPath.objects.select_related("source", "destination", "vrf").prefetch_related(
        Prefetch("hops", queryset=PathHop.objects.select_related("link").order_by("position"))
    )
    serializer_class = s.NetworkPathSerializer
    filterset_class = filtersets.NetworkPathFilterSet
    ordering_fields = ["name", "rtt_ms", "capacity_bps", "hop_count"]


@extend_schema(request={"application/x-yaml": OpenApiTypes.STR}, responses={200: s.ImportResultSerializer})
@api_view(["POST"])
@parser_classes([PlainTextParser, BoundedJSONParser])
@permission_classes([TokenScoped, ReadAnyAuthenticatedWriteStaff])
def import_view(request: Request) -> Response:
    """Import a topology file (YAML in the body): all of it, or nothing, with the line of any error."""
    data = request.data
    text = data if isinstance(data, str) else data.get("text", "") if isinstance(data, dict) else ""
    if not text or not str(text).strip():
        return Response(
            {"detail": "The request body must hold a topology file (YAML).", "field": "body"},
            status=status.HTTP_400_BAD_REQUEST,
        )
    try:
        summary = import_topology(text=str(text))
    except TopologyFileError as exc:
        return Response(
            {"detail": exc.reason, "line": exc.line, "field": exc.field, "message": str(exc)},
            status=status.HTTP_400_BAD_REQUEST,
        )
    return Response(summary.as_dict())


@extend_schema(responses={(200, "application/x-yaml"): OpenApiTypes.OBJECT})
@api_view(["GET"])
def export_view(request: Request) -> HttpResponse:
    """The topology as a file that ``import`` reads back."""
    return HttpResponse(export_topology(), content_type="application/x-yaml")
