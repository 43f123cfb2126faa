from __future__ import annotations

from rest_framework import serializers

from ..choices import CheckMode
from ..models import ConsistencyCheck, Finding
from ..services import MAX_GRACE_HOURS


class ConsistencyCheckSerializer(serializers.ModelSerializer):
    endpoint: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = ConsistencyCheck
        fields = [
            "id",
            "endpoint",
            "mode",
            "checksum_fraction",
            "dark_grace_seconds",
            "requested_by",
            "state",
            "started",
            "finished",
            "files_listed",
            "files_checked",
            "checksums_read",
            "lost",
            "corrupt",
            "dark",
            "unchecked",
            "error_count",
            "errors",
        ]
        read_only_fields = fields


class StartCheckSerializer(serializers.Serializer):
    """What a check is asked for with (the settings' defaults for what is left out)."""

    endpoint = serializers.CharField(max_length=64)
    mode = serializers.ChoiceField(choices=CheckMode.choices, required=False)
    checksum_fraction = serializers.FloatField(required=False, min_value=0.0, max_value=1.0)
    dark_grace_hours = serializers.FloatField(required=False, min_value=0.0, max_value=MAX_GRACE_HOURS)


class FindingSerializer(serializers.ModelSerializer):
    check = serializers.IntegerField(source="check_run_id", read_only=True)
    endpoint = serializers.CharField(source="check_run.endpoint.name", read_only=True)
    product = serializers.SerializerMethodField()

    class Meta:
        model = Finding
        fields = [
            "id",
            "check",
            "endpoint",
            "kind",
            "path",
            "replica",
            "product",
            "expected_size",
            "found_size",
            "expected_adler32",
            "found_adler32",
            "modified",
            "action",
            "acted",
        ]
        read_only_fields = fields

    def get_product(self, finding: Finding) -> str | None:
        return finding.replica.product.did if finding.replica is not None else None
