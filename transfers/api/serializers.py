"""REST representations of transfer jobs and files."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers

from srcnet.api.serializers import ValidatedModelSerializer
from topology.services.storage_urls import known_storage_element

from ..choices import ChecksumMode
from ..models import (
    ActivityShare,
    LinkLimit,
    LinkPause,
    OptimizerDecision,
    StorageElementLimit,
    TransferAttempt,
    TransferFile,
    TransferJob,
)
from ..services import FileRequest, submit_job


class TransferAttemptSerializer(serializers.ModelSerializer):
    class Meta:
        model = TransferAttempt
        fields = ["number", "state", "started", "finished", "reason", "worker"]


class TransferFileSerializer(serializers.ModelSerializer):
    job_id = serializers.UUIDField(source="job.job_id", read_only=True)
    throughput_bps = serializers.FloatField(read_only=True)

    class Meta:
        model = TransferFile
        fields = [
            "id",
            "job_id",
            "file_index",
            "source_surl",
            "dest_surl",
            "source_se",
            "dest_se",
            "filesize",
            "checksum",
            "state",
            "reason",
            "attempts",
            "retry_after",
            "start_time",
            "finish_time",
            "transferred_bytes",
            "duration_seconds",
            "throughput_bps",
            "source_checksum",
            "dest_checksum",
            "metadata",
        ]
        read_only_fields = fields


class TransferFileDetailSerializer(TransferFileSerializer):
    attempt_rows = TransferAttemptSerializer(many=True, read_only=True)

    class Meta(TransferFileSerializer.Meta):
        fields = [*TransferFileSerializer.Meta.fields, "attempt_rows"]
        read_only_fields = fields


class FileRequestSerializer(serializers.Serializer):
    source = serializers.CharField()  # type: ignore[assignment]  # a field named like DRF's attribute
    destination = serializers.CharField()
    filesize = serializers.IntegerField(required=False, allow_null=True, min_value=0)
    checksum = serializers.CharField(required=False, allow_blank=True, default="")
    metadata = serializers.DictField(required=False, default=dict)


class TransferJobSerializer(serializers.ModelSerializer):
    files = TransferFileSerializer(many=True, read_only=True)
    file_requests = FileRequestSerializer(many=True, write_only=True, source="files_in")
    verify_checksum = serializers.ChoiceField(choices=ChecksumMode.choices, default=ChecksumMode.BOTH)
    submitter = serializers.CharField(source="submitter.username", read_only=True, default=None)

    class Meta:
        model = TransferJob
        fields = [
            "id",
            "job_id",
            "state",
            "priority",
            "activity",
            "verify_checksum",
            "overwrite",
            "retry",
            "retry_delay",
            "timeout",
            "metadata",
            "submitter",
            "reason",
            "created",
            "updated",
            "finished",
            "files",
            "file_requests",
        ]
        read_only_fields = ["job_id", "state", "reason", "created", "updated", "finished"]
        extra_kwargs = {"retry": {"required": False}, "retry_delay": {"required": False}}

    def validate_priority(self, value: int) -> int:
        if not 1 <= value <= 5:
            raise serializers.ValidationError("Priority runs from 1 to 5.")
        return value

    def create(self, validated_data: dict[str, Any]) -> TransferJob:
        files = [FileRequest(**f) for f in validated_data.pop("files_in")]
        request = self.context.get("request")
        try:
            return submit_job(files=files, submitter=request.user if request else None, **validated_data)
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.message_dict) from exc


class _KnownStorageElements:
    """Limits and pauses name ``*`` or the storage element of a registered endpoint, nothing else."""

    storage_element_fields: tuple[str, ...] = ("source_se", "dest_se")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        errors = {
            name: f"{attrs[name]!r} is neither '*' nor the storage element (scheme://host:port) of a "
            "registered storage endpoint"
            for name in self.storage_element_fields
            if name in attrs and not known_storage_element(attrs[name])
        }
        if errors:
            raise serializers.ValidationError(errors)
        return super().validate(attrs)  # type: ignore[misc]


class LinkLimitSerializer(_KnownStorageElements, ValidatedModelSerializer):
    class Meta:
        model = LinkLimit
        fields = ["id", "source_se", "dest_se", "min_active", "max_active", "optimizer_mode", "nostreams"]


class StorageElementLimitSerializer(_KnownStorageElements, ValidatedModelSerializer):
    storage_element_fields = ("storage_element",)

    class Meta:
        model = StorageElementLimit
        fields = ["id", "storage_element", "inbound_max_active", "outbound_max_active"]


class ActivityShareSerializer(ValidatedModelSerializer):
    class Meta:
        model = ActivityShare
        fields = ["id", "activity", "weight"]


class LinkPauseSerializer(_KnownStorageElements, ValidatedModelSerializer):
    created_by = serializers.CharField(source="created_by.username", read_only=True, default=None)

    class Meta:
        model = LinkPause
        fields = ["id", "source_se", "dest_se", "reason", "created_by", "created"]
        read_only_fields = ["created"]


class OptimizerDecisionSerializer(serializers.ModelSerializer):
    class Meta:
        model = OptimizerDecision
        fields = [
            "id",
            "source_se",
            "dest_se",
            "active",
            "ema_bps",
            "throughput_bps",
            "success_rate",
            "queued",
            "rationale",
            "created",
        ]
        read_only_fields = fields
