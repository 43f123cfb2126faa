"""REST representations of the push loop's records and of simulations."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from ..models import PathMeasurement, PushCycle, Simulation


class PushCycleSerializer(serializers.ModelSerializer):
    class Meta:
        model = PushCycle
        fields = [
            "id",
            "created",
            "products_queued",
            "legs_planned",
            "legs_submitted",
            "submitted",
            "events",
            "error",
        ]
        read_only_fields = fields

    def to_representation(self, instance: PushCycle) -> dict[str, Any]:
        """Without the submissions of products the caller may not see (replicas/visibility.py)."""
        data = super().to_representation(instance)
        hidden = self.context.get("hidden_dids", frozenset())
        data["submitted"] = [entry for entry in data["submitted"] if entry.get("product") not in hidden]
        return data


class PathMeasurementSerializer(serializers.ModelSerializer):
    streams = serializers.IntegerField(min_value=1, max_value=256)
    bytes = serializers.IntegerField(min_value=1)
    seconds = serializers.FloatField(min_value=0.001)
    throughput_bps = serializers.FloatField(min_value=0.0)

    class Meta:
        model = PathMeasurement
        fields = [
            "id",
            "source",
            "destination",
            "streams",
            "files",
            "bytes",
            "seconds",
            "throughput_bps",
            "rtt_ms",
            "copy_dead_s",
            "planned_bps",
            "succeeded",
            "job_id",
            "created",
        ]
        # What the push loop works out from its own jobs (schedulers/measurements.py).
        read_only_fields = ["id", "copy_dead_s", "planned_bps", "created"]

    def validate(self, attrs):  # type: ignore[no-untyped-def]
        from topology.models import NetworkPath

        source, destination = attrs["source"], attrs["destination"]
        if not NetworkPath.objects.filter(source__name=source, destination__name=destination).exists():
            raise serializers.ValidationError({"destination": f"no path from {source} to {destination}"})
        return attrs


class SimulationSerializer(serializers.ModelSerializer):
    requested_by = serializers.CharField(source="requested_by.username", read_only=True, default=None)
    report_files = serializers.SerializerMethodField()

    class Meta:
        model = Simulation
        fields = [
            "id",
            "scenario",
            "days",
            "topology",
            "failures",
            "with_lp",
            "state",
            "summary",
            "error",
            "requested_by",
            "created",
            "finished",
            "report_files",
        ]
        read_only_fields = [
            "state",
            "summary",
            "error",
            "requested_by",
            "created",
            "finished",
            "report_files",
        ]

    def get_report_files(self, obj: Simulation) -> list[str]:
        from ..services import report_dir

        folder = report_dir(obj.pk)
        return sorted(p.name for p in folder.iterdir()) if folder.exists() else []
