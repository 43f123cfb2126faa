"""REST representations of products, replicas and policies."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, cast

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError
from django.db.models import Manager
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from projects.models import Project
from srcnet.api.serializers import LookupSlugField, ValidatedModelSerializer, name_field
from topology.models import RegionalCentre, StorageEndpoint, Telescope

from ..models import (
    POLICY_INPUT_FIELDS,
    CopyRequest,
    DataProduct,
    PolicyShare,
    ProductFile,
    Replica,
    ReplicaPolicy,
)
from ..services import FileSpec, register_product


class ProductFileSerializer(serializers.ModelSerializer):
    class Meta:
        model = ProductFile
        fields = ["name", "size_bytes", "adler32"]


# The serializer context's key for the predicted arrivals of the replicas in one response: replica id ->
# its ``schedulers.arrivals.CopyArrival``, None when it is not pending; worked out once for all of them.
ARRIVALS = "copy_arrivals"


def _items(data: Any) -> list[Any]:
    return list(data.all() if isinstance(data, Manager) else data)


def predict_arrivals(context: Mapping[str, Any], replicas: Iterable[Replica]) -> None:
    """Predict, in one call, when each pending replica of ``replicas`` not predicted yet in this response
    will arrive; a replica's upstream copy is predicted with it (a second copy waits for its upstream)."""
    # The root serializer's context: a dict (DRF types it as a Mapping), shared by the nested serializers.
    found: dict[int, Any] = cast(dict[str, Any], context).setdefault(ARRIVALS, {})
    replicas = [r for r in replicas if r.pk not in found]
    if not replicas:
        return
    from schedulers.arrivals import copy_arrivals

    known = {r.pk for r in replicas}
    upstreams = {r.upstream_id: r.upstream for r in replicas if r.upstream_id and r.upstream_id not in known}
    predicted = copy_arrivals([*(u for u in upstreams.values() if u is not None), *replicas])
    found.update({r.pk: predicted.get(r.pk) for r in replicas})


class ReplicaListSerializer(serializers.ListSerializer):
    """Replicas, with one prediction of arrivals for all of them (not one per replica)."""

    def to_representation(self, data: Any) -> list[Any]:
        items = _items(data)
        predict_arrivals(self.context, items)
        return super().to_representation(items)


class CopyRequestSerializer(serializers.ModelSerializer):
    """The push loop's request for a replica's copy: its transfer job, the plan, the outcome."""

    lane = serializers.SerializerMethodField(help_text="[source site, destination site]")
    via = serializers.CharField(source="via_site", read_only=True, help_text="The relay site; empty: none")
    endpoint = serializers.CharField(
        read_only=True, help_text="The FTS3 endpoint of the job; empty: the platform's own transfer service"
    )

    class Meta:
        model = CopyRequest
        fields = [
            "job_id",
            "endpoint",
            "lane",
            "via",
            "planned_bps",
            "streams",
            "streams_per_file",
            "predicted_arrival",
            "state",
            "reasons",
            "source_problem",
            "submitted",
            "settled",
        ]
        read_only_fields = fields

    def get_lane(self, request: CopyRequest) -> list[str]:
        return [request.source_site, request.destination_site]


class ReplicaSerializer(serializers.ModelSerializer):
    product = serializers.CharField(source="product.did", read_only=True)
    endpoint: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="name", read_only=True)
    site = serializers.CharField(source="endpoint.site.name", read_only=True)
    policy: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="name", read_only=True)
    upstream = serializers.CharField(
        source="upstream.endpoint.name",
        read_only=True,
        allow_null=True,
        help_text="The storage it is copied from (a second or full copy); null: from the SDP",
    )
    via: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="name", read_only=True)
    predicted_arrival = serializers.SerializerMethodField(
        help_text="When this copy is predicted to arrive (planned or copying, not at the SDP); null: "
        "it is not pending, or no time can be predicted yet (arrival_note says why)"
    )
    arrival_note = serializers.SerializerMethodField(
        help_text="Why it arrives then and not sooner (schedulers/arrivals.py); empty when not pending"
    )
    copy_requests = CopyRequestSerializer(
        many=True, read_only=True, help_text="The transfer jobs that carried (or carry) its copy, in order"
    )

    class Meta:
        model = Replica
        list_serializer_class = ReplicaListSerializer
        fields = [
            "id",
            "product",
            "endpoint",
            "site",
            "state",
            "policy",
            "upstream",
            "via",
            "reason",
            "rerouted",
            "predicted_arrival",
            "arrival_note",
            "copy_requests",
            "created",
            "updated",
        ]

    def _arrival(self, replica: Replica) -> Any:
        # Nested in a product or in a list, the parent has predicted every replica of the response already.
        predict_arrivals(self.context, [replica])
        return self.context[ARRIVALS].get(replica.pk)

    @extend_schema_field(OpenApiTypes.DATETIME)
    def get_predicted_arrival(self, replica: Replica) -> str | None:
        arrival = self._arrival(replica)
        if arrival is None or arrival.at is None:
            return None
        return serializers.DateTimeField().to_representation(arrival.at)

    def get_arrival_note(self, replica: Replica) -> str:
        arrival = self._arrival(replica)
        return arrival.note if arrival is not None else ""


class DataProductListSerializer(serializers.ListSerializer):
    """Products, with one prediction of arrivals for all their replicas (not one per product)."""

    def to_representation(self, data: Any) -> list[Any]:
        items = _items(data)
        predict_arrivals(self.context, [r for product in items for r in product.replicas.all()])
        return super().to_representation(items)


class DataProductSerializer(serializers.ModelSerializer):
    """A product; created with its files, which the SDP has already written at the source storage."""

    telescope = name_field(Telescope.objects.all())
    source = name_field(StorageEndpoint.objects.all(), required=False)  # type: ignore[assignment]
    files = ProductFileSerializer(many=True)
    replicas = ReplicaSerializer(many=True, read_only=True)
    size_bytes = serializers.IntegerField(read_only=True)
    did = serializers.CharField(read_only=True)
    project = LookupSlugField(
        slug_field="code", queryset=Project.objects.all(), required=False, allow_null=True
    )

    class Meta:
        model = DataProduct
        fields = [
            "id",
            "did",
            "scope",
            "name",
            "telescope",
            "source",
            "project",
            "observation_id",
            "product_type",
            "proprietary_until",
            "predicted_arrival",
            "arrival_note",
            "submitted_prediction",
            "state",
            "priority",
            "created",
            "deadline",
            "size_bytes",
            "files",
            "replicas",
        ]
        read_only_fields = ["state", "created", "predicted_arrival", "arrival_note", "submitted_prediction"]
        list_serializer_class = DataProductListSerializer
        # The (scope, name) check is ``validate``'s, which names the field (DRF's own names none).
        validators: list[Any] = []

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        scope, name = attrs.get("scope"), attrs.get("name")
        if self.instance is None and DataProduct.objects.filter(scope=scope, name=name).exists():
            raise serializers.ValidationError({"name": "A product with this scope and name exists."})
        return attrs

    def to_representation(self, instance: DataProduct) -> dict[str, Any]:
        predict_arrivals(self.context, instance.replicas.all())
        return super().to_representation(instance)

    def create(self, validated_data: dict[str, Any]) -> DataProduct:
        files = [
            FileSpec(name=f["name"], size_bytes=f["size_bytes"], adler32=f["adler32"])
            for f in validated_data.pop("files")
        ]
        try:
            return register_product(
                scope=validated_data["scope"],
                name=validated_data["name"],
                telescope=validated_data["telescope"],
                files=files,
                priority=validated_data.get("priority", 3),
                source=validated_data.get("source"),
                project=validated_data.get("project"),
                observation_id=validated_data.get("observation_id", ""),
                product_type=validated_data.get("product_type", ""),
            )
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.message_dict) from exc
        except IntegrityError as exc:
            raise serializers.ValidationError({"name": "A product with this scope and name exists."}) from exc

    def update(self, instance: DataProduct, validated_data: dict[str, Any]) -> DataProduct:
        allowed = {"priority", "deadline", "proprietary_until"}
        extra = set(validated_data) - allowed
        if extra:
            message = "Only priority, deadline and proprietary_until can change."
            raise serializers.ValidationError({sorted(extra)[0]: message})
        for key, value in validated_data.items():
            setattr(instance, key, value)
        try:
            instance.full_clean()
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.message_dict) from exc
        instance.save()
        return instance


class PolicyShareSerializer(serializers.ModelSerializer):
    destination = name_field(StorageEndpoint.objects.all())

    class Meta:
        model = PolicyShare
        fields = ["destination", "weight"]


class ReplicaPolicySerializer(ValidatedModelSerializer):
    telescope = name_field(Telescope.objects.all())
    shares = PolicyShareSerializer(many=True, required=False)
    copy_site = name_field(RegionalCentre.objects.all(), required=False, allow_null=True)
    relay_centre = name_field(RegionalCentre.objects.all(), required=False, allow_null=True)
    effective_weights = serializers.SerializerMethodField()
    parameters = serializers.SerializerMethodField()

    class Meta:
        model = ReplicaPolicy
        fields = ["id", *POLICY_INPUT_FIELDS, "shares", "effective_weights", "parameters"]
        validators: list[Any] = []

    def get_effective_weights(self, obj: ReplicaPolicy) -> dict[str, float]:
        return obj.weights()

    def get_parameters(self, obj: ReplicaPolicy) -> str:
        return obj.parameters()

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        shares = attrs.pop("shares", None)
        attrs = super().validate(attrs)
        if shares is not None:
            attrs["shares"] = shares
            for index, share in enumerate(shares):
                row = PolicyShare(destination=share["destination"], weight=share["weight"])
                try:
                    row.full_clean(exclude=["policy"])
                except DjangoValidationError as exc:
                    raise serializers.ValidationError(
                        {f"shares[{index}].{k}": v for k, v in exc.message_dict.items()}
                    ) from exc
        return attrs

    def _write_shares(self, policy: ReplicaPolicy, shares: list[dict[str, Any]] | None) -> None:
        if shares is None:
            return
        policy.shares.all().delete()
        PolicyShare.objects.bulk_create([PolicyShare(policy=policy, **share) for share in shares])

    def create(self, validated_data: dict[str, Any]) -> ReplicaPolicy:
        shares = validated_data.pop("shares", None)
        policy = super().create(validated_data)
        self._write_shares(policy, shares)
        return policy

    def update(self, instance: ReplicaPolicy, validated_data: dict[str, Any]) -> ReplicaPolicy:
        shares = validated_data.pop("shares", None)
        policy = super().update(instance, validated_data)
        self._write_shares(policy, shares)
        return policy


class ProductBatchSerializer(serializers.Serializer):
    """Products to register in one request, all or none (``POST /api/replicas/products/batch/``)."""

    products = DataProductSerializer(many=True, help_text="1 to 1000 products, as one POST of each would be")


class RegisteredProductSerializer(serializers.Serializer):
    id = serializers.IntegerField(read_only=True)
    did = serializers.CharField(read_only=True, help_text="scope:name")


class ProductBatchResultSerializer(serializers.Serializer):
    registered = RegisteredProductSerializer(many=True, read_only=True)
