"""REST endpoints of products, replicas and policies."""

from __future__ import annotations

from collections import Counter

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from django.db.models import Prefetch, QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, mixins, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from replicas.visibility import product_condition, visible_products
from schedulers.services import push_product
from topology.models import Telescope

from .. import backlog, filtersets
from ..models import DataProduct, Replica, ReplicaPolicy
from ..selectors import product_transfers
from . import serializers as s

# The most products one batch registration carries (a telescope's burst is sent as many batches).
BATCH_LIMIT = 1000


def _admit(per_telescope: Counter[Telescope]) -> None:
    """Each telescope's SDP queue has room for its products, or the request is refused with 429 and the wait
    (``Retry-After``) the backlog names."""
    for telescope, count in per_telescope.items():
        try:
            backlog.admit(telescope, count)
        except backlog.BacklogFull as full:
            raise exceptions.Throttled(wait=full.retry_after, detail=str(full)) from full


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

    def perform_create(self, serializer: serializers.BaseSerializer[DataProduct]) -> None:
        """Register a product the SDP has written; 429 with ``Retry-After`` while its telescope's SDP queue
        is full (``replicas/backlog.py``): nothing is written, the client sends it again later."""
        _admit(Counter([serializer.validated_data["telescope"]]))
        serializer.save()

    @extend_schema(request=s.ProductBatchSerializer, responses={201: s.ProductBatchResultSerializer})
    @action(detail=False, methods=["post"])
    def batch(self, request: Request) -> Response:
        """Register up to ``BATCH_LIMIT`` products in one request, all or none: 400 naming the first bad
        field as ``products[i].<field>`` (none written), 429 with ``Retry-After`` when they would take a
        telescope's SDP queue past its bound (none written), else 201 with each product's id and DID."""
        items = request.data.get("products") if isinstance(request.data, dict) else None
        if not isinstance(items, list) or not 1 <= len(items) <= BATCH_LIMIT:
            raise serializers.ValidationError({"products": f"a list of 1 to {BATCH_LIMIT} products"})
        checked = [self.get_serializer(data=item) for item in items]
        errors = {
            f"products[{index}].{field}": problem
            for index, one in enumerate(checked)
            if not one.is_valid()
            for field, problem in dict(one.errors).items()  # a product's errors are by field
        }
        if errors:
            raise serializers.ValidationError(errors)
        seen: set[tuple[str, str]] = set()
        for index, one in enumerate(checked):
            did = (one.validated_data["scope"], one.validated_data["name"])
            if did in seen:
                raise serializers.ValidationError({f"products[{index}].name": "appears twice in the batch"})
            seen.add(did)
        made = []
        with transaction.atomic():
            _admit(Counter(one.validated_data["telescope"] for one in checked))
            for index, one in enumerate(checked):
                try:
                    product = one.save()
                except serializers.ValidationError as exc:
                    detail = exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
                    raise serializers.ValidationError(
                        {f"products[{index}].{field}": problem for field, problem in detail.items()}
                    ) from exc
                made.append({"id": product.pk, "did": product.did})
        return Response({"registered": made}, status=201)

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
