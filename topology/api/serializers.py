"""REST representations of the topology; relations are written and read by name."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from rest_framework import serializers

from srcnet.api.serializers import ValidatedModelSerializer, name_field

from ..models import (
    Dtn,
    Link,
    NetworkPath,
    PointOfPresence,
    RegionalCentre,
    Site,
    StorageEndpoint,
    Telescope,
    Vrf,
)
from ..physics import streams_needed, tcp_ceiling_bps
from ..services.paths import save_declared_path

DEFAULT_WINDOW_BYTES = 2**30


class VrfSerializer(ValidatedModelSerializer):
    parent = name_field(Vrf.objects.all(), required=False, allow_null=True)  # type: ignore[assignment]

    class Meta:
        model = Vrf
        fields = ["id", "name", "scope", "route_distinguisher", "parent", "description"]


SITE_FIELDS = ["id", "name", "kind", "region", "country", "latitude", "longitude", "vrf", "description"]


class SiteSerializer(serializers.ModelSerializer):
    vrf: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = Site
        fields = SITE_FIELDS
        read_only_fields = SITE_FIELDS


class TelescopeSerializer(ValidatedModelSerializer):
    vrf = name_field(Vrf.objects.all(), required=False, allow_null=True)

    class Meta:
        model = Telescope
        fields = [*SITE_FIELDS, "daily_volume_bytes", "sdp_buffer_bytes", "sustained_rate_bps"]
        read_only_fields = ["kind", "sustained_rate_bps"]


class RegionalCentreSerializer(ValidatedModelSerializer):
    vrf = name_field(Vrf.objects.all(), required=False, allow_null=True)

    class Meta:
        model = RegionalCentre
        fields = [
            *SITE_FIELDS,
            "is_distribution_centre",
            "share_weight",
            "budget_per_telescope_bps",
            "peak_bps",
        ]
        read_only_fields = ["kind"]


class PointOfPresenceSerializer(ValidatedModelSerializer):
    vrf = name_field(Vrf.objects.all(), required=False, allow_null=True)

    class Meta:
        model = PointOfPresence
        fields = [*SITE_FIELDS, "operator"]
        read_only_fields = ["kind"]


class StorageEndpointSerializer(ValidatedModelSerializer):
    site = name_field(Site.objects.all())

    class Meta:
        model = StorageEndpoint
        fields = [
            "id",
            "name",
            "site",
            "role",
            "hostname",
            "root_port",
            "http_port",
            "prefix",
            "tpc_scheme",
            "token_audience",
            "capacity_bytes",
            "is_active",
        ]


class DtnSerializer(ValidatedModelSerializer):
    site = name_field(Site.objects.all())

    class Meta:
        model = Dtn
        fields = ["id", "name", "site", "hostname", "nic_speed_bps", "tcp_window_bytes", "tuning_profile"]


class LinkSerializer(ValidatedModelSerializer):
    a_end = name_field(Site.objects.all())
    b_end = name_field(Site.objects.all())
    vrfs = name_field(Vrf.objects.all(), many=True, required=False)

    class Meta:
        model = Link
        fields = [
            "id",
            "name",
            "a_end",
            "b_end",
            "kind",
            "capacity_bps",
            "rtt_ms",
            "loss_rate",
            "owner",
            "capex_eur",
            "opex_eur_per_year",
            "vrfs",
            "is_up",
        ]


class NetworkPathSerializer(serializers.ModelSerializer):
    """A path: declared paths are written with their ordered link names; metrics are derived."""

    source = name_field(Site.objects.all())  # type: ignore[assignment]
    destination = name_field(Site.objects.all())
    vrf = name_field(Vrf.objects.all(), required=False, allow_null=True)
    links = serializers.ListField(child=serializers.CharField(), write_only=True)
    hops = serializers.SerializerMethodField()
    per_flow_ceiling_bps = serializers.SerializerMethodField(help_text="window / RTT with a 1 GiB window")
    streams_to_fill = serializers.SerializerMethodField(help_text="TCP streams that fill the bottleneck")

    class Meta:
        model = NetworkPath
        fields = [
            "id",
            "name",
            "source",
            "destination",
            "vrf",
            "is_computed",
            "links",
            "hops",
            "hop_count",
            "capacity_bps",
            "rtt_ms",
            "loss_rate",
            "opex_eur_per_year",
            "per_flow_ceiling_bps",
            "streams_to_fill",
        ]
        read_only_fields = [
            "is_computed",
            "hop_count",
            "capacity_bps",
            "rtt_ms",
            "loss_rate",
            "opex_eur_per_year",
        ]

    def get_hops(self, obj: NetworkPath) -> list[str]:
        return [hop.link.name for hop in obj.hops.all()]

    def get_per_flow_ceiling_bps(self, obj: NetworkPath) -> float | None:
        return tcp_ceiling_bps(DEFAULT_WINDOW_BYTES, obj.rtt_ms) if obj.rtt_ms > 0 else None

    def get_streams_to_fill(self, obj: NetworkPath) -> int | None:
        if obj.rtt_ms <= 0 or obj.capacity_bps <= 0:
            return None
        return streams_needed(obj.capacity_bps, window_bytes=DEFAULT_WINDOW_BYTES, rtt_ms=obj.rtt_ms)

    def _save(self, name: str, data: dict[str, Any]) -> NetworkPath:
        try:
            save_declared_path(
                name=name,
                source=data["source"].name,
                destination=data["destination"].name,
                link_names=data["links"],
                vrf=data["vrf"].name if data.get("vrf") else None,
            )
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.message_dict) from exc
        return NetworkPath.objects.get(name=name)

    def create(self, validated_data: dict[str, Any]) -> NetworkPath:
        if NetworkPath.objects.filter(name=validated_data["name"]).exists():
            raise serializers.ValidationError({"name": "A path with this name exists."})
        return self._save(validated_data["name"], validated_data)

    def update(self, instance: NetworkPath, validated_data: dict[str, Any]) -> NetworkPath:
        if instance.is_computed:
            raise serializers.ValidationError(
                {"name": "Computed paths follow the links; declare a path instead."}
            )
        data = {
            "source": instance.source,
            "destination": instance.destination,
            "vrf": instance.vrf,
            "links": [h.link.name for h in instance.hops.all()],
            **validated_data,
        }
        name = validated_data.get("name", instance.name)
        with transaction.atomic():  # a rename and the new hops together, or neither
            if name != instance.name:  # a rename (it was dropped without a word before)
                if NetworkPath.objects.filter(name=name).exists():
                    raise serializers.ValidationError({"name": "A path with this name exists."})
                instance.name = name
                instance.save(update_fields=["name"])
            return self._save(name, data)


class ImportResultSerializer(serializers.Serializer):
    created = serializers.DictField(child=serializers.IntegerField())
    updated = serializers.DictField(child=serializers.IntegerField())
    paths_computed = serializers.IntegerField()
    warnings = serializers.ListField(child=serializers.CharField())
