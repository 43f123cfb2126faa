"""Read-only JSON for the portal's live views (map, flows) and the audit trail.

Any authenticated user reads (the project's default permission); the actions themselves are portal forms
and services, so nothing here writes."""

from __future__ import annotations

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import viewsets
from rest_framework.decorators import api_view, permission_classes
from rest_framework.request import Request
from rest_framework.response import Response

from replicas.visibility import visible_events
from srcnet.api.permissions import OperatorsOnly, TokenScoped
from topology.models import Link, NetworkPath, Site

from .. import details, selectors
from ..filtersets import AuditEventFilterSet
from ..models import AuditEvent
from .serializers import AuditEventSerializer


class AuditEventViewSet(viewsets.ReadOnlyModelViewSet):
    """The audit trail, newest first."""

    queryset = AuditEvent.objects.all()
    serializer_class = AuditEventSerializer
    filterset_class = AuditEventFilterSet

    def get_queryset(self) -> QuerySet[AuditEvent]:
        return visible_events(self.request.user, super().get_queryset())


@extend_schema(responses={200: OpenApiTypes.OBJECT})
@api_view(["GET"])
def network(request: Request) -> Response:
    """Sites, links with their live load, and paths (``?paths=0`` leaves the paths out)."""
    return Response(selectors.network(with_paths=request.query_params.get("paths") != "0"))


@extend_schema(responses={200: OpenApiTypes.OBJECT})
@api_view(["GET"])
def flows(request: Request) -> Response:
    """Load per loaded path and per telescope access link, live files and the queue."""
    return Response(details.flows(request.user))


@extend_schema(responses={200: OpenApiTypes.OBJECT})
@api_view(["GET"])
def path_detail(request: Request, pk: int) -> Response:
    path = get_object_or_404(NetworkPath.objects.select_related("source", "destination", "vrf"), pk=pk)
    return Response(details.path_detail(path, request.user))


@extend_schema(responses={200: OpenApiTypes.OBJECT})
@api_view(["GET"])
def site_detail(request: Request, pk: int) -> Response:
    return Response(details.site_detail(get_object_or_404(Site, pk=pk)))


@extend_schema(responses={200: OpenApiTypes.OBJECT})
@api_view(["GET"])
def link_detail(request: Request, pk: int) -> Response:
    return Response(
        details.link_detail(get_object_or_404(Link.objects.select_related("a_end", "b_end"), pk=pk))
    )


@extend_schema(
    parameters=[OpenApiParameter("target", str, description="SOURCE:DESTINATION, an endpoint, or nothing")],
    responses={200: OpenApiTypes.OBJECT},
)
@api_view(["GET"])
@permission_classes([TokenScoped, OperatorsOnly])
def token_check(request: Request) -> Response:
    """The token doctor (operations/token_doctor.py): ``?target=SOURCE:DESTINATION`` (a lane), an endpoint's
    name, or nothing for every lane of the plan. 200 with ``ok`` and the findings; 400 naming ``target``
    when it names nothing known."""
    from operations.token_doctor import UnknownTarget, check
    from transfers.token_doctor import as_dicts

    target = request.query_params.get("target", "")
    if len(target) > 200:
        return Response({"target": ["At most 200 characters."]}, status=400)
    try:
        findings = check(target)
    except UnknownTarget as exc:
        return Response({"target": [str(exc)]}, status=400)
    return Response({"ok": all(f.ok for f in findings), "target": target, "findings": as_dicts(findings)})
