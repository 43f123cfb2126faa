"""REST endpoints of products, replicas and policies."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from django.db.models import Prefetch, QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from replicas.visibility import product_condition, visible_products
from schedulers.services import push_product

from .. import filtersets
from ..models import DataProduct, Replica, ReplicaPolicy
from ..selectors import product_transfers
from . import serializers as s


class DataProductViewSet(
    mixins.CreateModelMixin,
    mixins.RetrieveModelMixin,
    mixins.UpdateModelMixin,
    mixins.ListModelMixin,
    viewsets.GenericViewSet,
):
    queryset = DataProduct.objects.select_related("telescope", "source").prefetch_related(
        "files",
        Prefetch(
            "replicas",
            # upstream's site: a second copy's lane, for its predicted arrival (schedulers/arrivals.py)
            queryset=Replica.objects.select_related(
                "endpoint__site", "policy", "product", "upstream__endpoint__site", "via"
            ).prefetch_related("copy_requests"),
        ),
    )
    serializer_class = s.DataProductSerializer
    # A product's files and names never change once registered: PATCH the fields that may (priority, deadline,
    # proprietary_until); a PUT of the whole product could never succeed, so it is not offered.
    http_method_names = ["get", "post", "patch", "head", "options"]
    filterset_class = filtersets.DataProductFilterSet
    ordering_fields = ["created", "name", "priority"]

    def get_queryset(self) -> QuerySet[DataProduct]:
        """Only the products the account may see (replicas/visibility.py): another project's proprietary
        product is a 404, as if it did not exist."""
        return visible_products(self.request.user, super().get_queryset())

    def retrieve(self, request: Request, *args: object, **kwargs: object) -> Response:
        """The product with every replica and, to see where its bytes are moving, its transfer jobs."""
        product = self.get_object()
        data = dict(self.get_serializer(product).data)
        data["transfers"] = product_transfers(product)
        return Response(data)

    @extend_schema(request=None, responses={200: s.ReplicaSerializer(many=True)})
    @action(detail=True, methods=["post"])
    def push(self, request: Request, pk: str | None = None) -> Response:
        """Push the product now through the push loop (one cycle plans the SDP queue and submits what is
        due); returns its replicas, none yet if its lane is busy (a later cycle submits it). Idempotent."""
        product = self.get_object()
        try:
            with transaction.atomic():
                replicas = push_product(product=product)
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.message_dict) from exc
        return Response(s.ReplicaSerializer(replicas, many=True).data)


class ReplicaViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = Replica.objects.select_related(
        "product", "endpoint__site", "policy", "upstream__endpoint__site", "upstream__product", "via"
    ).prefetch_related("copy_requests")
    serializer_class = s.ReplicaSerializer
    filterset_class = filtersets.ReplicaFilterSet

    def get_queryset(self) -> QuerySet[Replica]:
        return super().get_queryset().filter(product_condition(self.request.user, "product__"))


class ReplicaPolicyViewSet(viewsets.ModelViewSet):
    queryset = ReplicaPolicy.objects.select_related(
        "telescope", "copy_site", "relay_centre"
    ).prefetch_related("shares__destination")
    serializer_class = s.ReplicaPolicySerializer
    filterset_class = filtersets.ReplicaPolicyFilterSet
