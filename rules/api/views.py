"""Rules through the REST API: any account makes, lists and removes its own; operators see every rule."""

from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.exceptions import APIException
from rest_framework.request import Request
from rest_framework.response import Response

from ..models import Rule
from ..selectors import visible_rules
from ..services import RucioUnavailable, create_rule, remove_rule
from .serializers import RuleRequestSerializer, RuleSerializer


class RucioDown(APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = "Rucio could not be asked; nothing was made."
    default_code = "rucio_unavailable"


class RuleViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """A scientist's rules: copies of products at SRC storage (docs/scientists.md)."""

    queryset = Rule.objects.all()
    serializer_class = RuleSerializer
    permission_classes = [permissions.IsAuthenticated]
    filterset_fields = ["activity"]
    ordering_fields = ["created", "id"]

    def get_queryset(self) -> QuerySet[Rule]:
        return visible_rules(self.request.user)

    @extend_schema(request=RuleRequestSerializer, responses={201: RuleSerializer})
    def create(self, request: Request) -> Response:
        asked = RuleRequestSerializer(data=request.data)
        asked.is_valid(raise_exception=True)
        try:
            rule = create_rule(owner=request.user, **asked.validated_data)
        except RucioUnavailable as exc:
            raise RucioDown(f"Rucio could not be asked; nothing was made: {exc}") from exc
        return Response(RuleSerializer(rule).data, status=status.HTTP_201_CREATED)

    def perform_destroy(self, instance: Rule) -> None:
        try:
            remove_rule(rule=instance)
        except RucioUnavailable as exc:
            raise RucioDown(f"Rucio could not be asked; the rule stays: {exc}") from exc
