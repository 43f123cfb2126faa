"""Rules through the REST API: any account makes, lists and removes its own; operators see every rule."""

from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.exceptions import APIException
from rest_framework.request import Request
from rest_framework.response import Response

from srcnet.api.permissions import AnyAccount, TokenScoped
from srcnet.roles import is_operator

from ..models import Rule, Subscription
from ..selectors import visible_rules
from ..services import RucioUnavailable, create_rule, remove_rule
from ..subscriptions import create_subscription, remove_subscription
from .serializers import (
    RuleRequestSerializer,
    RuleSerializer,
    SubscriptionRequestSerializer,
    SubscriptionSerializer,
)


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
    permission_classes = [TokenScoped, AnyAccount]
    token_scope = "rules"
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


class SubscriptionViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Standing rules: every product registered from now on that matches gets a rule (docs/scientists.md)."""

    queryset = Subscription.objects.all()
    serializer_class = SubscriptionSerializer
    permission_classes = [TokenScoped, AnyAccount]
    token_scope = "rules"
    ordering_fields = ["created", "id"]

    def get_queryset(self) -> QuerySet[Subscription]:
        queryset = Subscription.objects.select_related("owner").prefetch_related("rules")
        return queryset if is_operator(self.request.user) else queryset.filter(owner_id=self.request.user.pk)

    @extend_schema(request=SubscriptionRequestSerializer, responses={201: SubscriptionSerializer})
    def create(self, request: Request) -> Response:
        asked = SubscriptionRequestSerializer(data=request.data)
        asked.is_valid(raise_exception=True)
        try:
            subscription = create_subscription(owner=request.user, **asked.validated_data)
        except RucioUnavailable as exc:
            raise RucioDown(f"Rucio could not be asked; nothing was made: {exc}") from exc
        return Response(SubscriptionSerializer(subscription).data, status=status.HTTP_201_CREATED)

    def perform_destroy(self, instance: Subscription) -> None:
        try:
            remove_subscription(subscription=instance)
        except RucioUnavailable as exc:
            raise RucioDown(f"Rucio could not be asked; the subscription stays: {exc}") from exc
