"""The consistency checks over the REST API: operators list and start checks, read their findings, and
remove or keep dark files (docs/reliability.md, "Storage consistency")."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from srcnet.api.permissions import OperatorsOnly, TokenScoped

from ..models import ConsistencyCheck, Finding
from ..services import act_on_dark_file, start_check
from .serializers import ConsistencyCheckSerializer, FindingSerializer, StartCheckSerializer


def _text_params(request: Request, *names: str) -> Any:
    """The query's parameters, once those ``names`` hold no NUL character: PostgreSQL cannot compare text with
    one (a 500 the API fuzzer found), so it is an invalid value, 400 naming the parameter."""
    params = request.query_params
    for name in names:
        if "\x00" in params.get(name, ""):
            raise serializers.ValidationError({name: ["must not contain a NUL character"]})
    return params


class ConsistencyCheckViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Checks, newest first (``?endpoint=NAME``, ``?state=``); POST starts one."""

    queryset = ConsistencyCheck.objects.select_related("endpoint")
    serializer_class = ConsistencyCheckSerializer
    permission_classes = [TokenScoped, OperatorsOnly]

    def get_queryset(self) -> QuerySet[ConsistencyCheck]:
        queryset = super().get_queryset()
        params = _text_params(self.request, "endpoint", "state")
        if params.get("endpoint"):
            queryset = queryset.filter(endpoint__name=params["endpoint"])
        if params.get("state"):
            queryset = queryset.filter(state=params["state"])
        return queryset

    @extend_schema(request=StartCheckSerializer, responses={201: ConsistencyCheckSerializer})
    def create(self, request: Request, *args: object, **kwargs: object) -> Response:
        asked = StartCheckSerializer(data=request.data)
        asked.is_valid(raise_exception=True)
        check = start_check(
            asked.validated_data["endpoint"],
            mode=asked.validated_data.get("mode"),
            checksum_fraction=asked.validated_data.get("checksum_fraction"),
            dark_grace_hours=asked.validated_data.get("dark_grace_hours"),
            user=request.user,
        )
        return Response(ConsistencyCheckSerializer(check).data, status=status.HTTP_201_CREATED)


class FindingViewSet(viewsets.ReadOnlyModelViewSet):
    """What the checks found (``?check=ID``, ``?kind=lost|corrupt|dark``, ``?endpoint=NAME``,
    ``?open=1``: not acted on); a dark file is removed or kept by an operator, audited."""

    queryset = Finding.objects.select_related("check_run__endpoint", "replica__product")
    serializer_class = FindingSerializer
    permission_classes = [TokenScoped, OperatorsOnly]

    @extend_schema(
        parameters=[
            OpenApiParameter("check", int),
            OpenApiParameter("kind", str),
            OpenApiParameter("endpoint", str),
            OpenApiParameter("open", bool),
        ]
    )
    def list(self, request: Request, *args: object, **kwargs: object) -> Response:
        return super().list(request, *args, **kwargs)

    def get_queryset(self) -> QuerySet[Finding]:
        queryset = super().get_queryset()
        params = _text_params(self.request, "endpoint", "kind")
        if params.get("check", "").isdigit():
            queryset = queryset.filter(check_run_id=int(params["check"]))
        if params.get("kind"):
            queryset = queryset.filter(kind=params["kind"])
        if params.get("endpoint"):
            queryset = queryset.filter(check_run__endpoint__name=params["endpoint"])
        if params.get("open") in ("1", "true"):
            queryset = queryset.filter(action="")
        return queryset

    @extend_schema(request=None, responses={200: FindingSerializer})
    @action(detail=True, methods=["post"])
    def remove(self, request: Request, pk: str | None = None) -> Response:
        """Remove a dark file from its storage (audited)."""
        return Response(FindingSerializer(act_on_dark_file(pk, remove=True, user=request.user)).data)

    @extend_schema(request=None, responses={200: FindingSerializer})
    @action(detail=True, methods=["post"])
    def keep(self, request: Request, pk: str | None = None) -> Response:
        """Keep a dark file (audited): it is no longer shown as waiting for a decision."""
        return Response(FindingSerializer(act_on_dark_file(pk, remove=False, user=request.user)).data)
