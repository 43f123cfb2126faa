"""REST representations of the push loop's records and of simulations."""

from __future__ import annotations

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


class PathMeasurementSerializer(serializers.ModelSerializer):
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
            "succeeded",
            "job_id",
            "created",
        ]
        read_only_fields = fields


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
