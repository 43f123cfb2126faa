from __future__ import annotations

from typing import Any

from rest_framework import serializers

from ..models import INPUT_FIELDS, Campaign, CampaignSample
from ..report import report_files

READ_ONLY = [
    "state",
    "created_by",
    "created",
    "started",
    "finished",
    "error",
    "active_seconds",
    "generated_bytes",
    "products_created",
    "summary",
    "report_files",
    "template",
    "runs",
]


class CampaignSerializer(serializers.ModelSerializer):
    created_by = serializers.CharField(source="created_by.username", read_only=True, default=None)
    report_files = serializers.SerializerMethodField()
    runs = serializers.SerializerMethodField(help_text="A recurring campaign's runs, newest first")
    sources = serializers.ListField(child=serializers.CharField(), allow_empty=False)
    destinations = serializers.ListField(child=serializers.CharField(), allow_empty=False)

    class Meta:
        model = Campaign
        fields = ["id", *INPUT_FIELDS, *READ_ONLY]
        read_only_fields = READ_ONLY

    def get_report_files(self, obj: Campaign) -> list[str]:
        return report_files(obj) if obj.state in (Campaign.State.FINISHED, Campaign.State.FAILED) else []

    def get_runs(self, obj: Campaign) -> list[int]:
        if not obj.is_recurring:
            return []
        return list(obj.runs.order_by("-created").values_list("pk", flat=True)[:100])


class SampleSerializer(serializers.ModelSerializer):
    class Meta:
        model = CampaignSample
        fields = [
            "elapsed_seconds",
            "wall_seconds",
            "target_rate_bps",
            "achieved_rate_bps",
            "planned_bytes",
            "achieved_bytes",
            "products",
            "complete",
            "failed",
            "per_destination",
        ]


def validation_detail(exc: Any) -> dict[str, Any]:
    """A model ValidationError as DRF wants it: one entry per field."""
    return {k: v for k, v in exc.message_dict.items()}
