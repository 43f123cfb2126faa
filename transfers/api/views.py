"""REST endpoints of the transfer service (the platform's own view; the FTS3 protocol comes separately)."""

from __future__ import annotations

from django.db.models import Prefetch, QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, viewsets
from rest_framework.decorators import action, api_view, authentication_classes, permission_classes
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from replicas.visibility import visible_jobs
from srcnet.api.permissions import ReadAnyAuthenticatedWriteAdmin, TokenScoped

from .. import filtersets
from ..models import (
    ActivityShare,
    LinkLimit,
    LinkPause,
    OptimizerDecision,
    StorageElementLimit,
    TransferFile,
    TransferJob,
)
from ..services import cancel_job, enqueue_dispatch_after_change
from . import serializers as s


class TransferJobViewSet(
    mixins.CreateModelMixin, mixins.RetrieveModelMixin, mixins.ListModelMixin, viewsets.GenericViewSet
):
    queryset = TransferJob.objects.select_related("submitter").prefetch_related(
        Prefetch("files", queryset=TransferFile.objects.select_related("job").order_by("file_index"))
    )
    serializer_class = s.TransferJobSerializer
    filterset_class = filtersets.TransferJobFilterSet
    lookup_field = "job_id"
    ordering_fields = ["created", "priority", "state"]

    def get_queryset(self) -> QuerySet[TransferJob]:
        return visible_jobs(self.request.user, super().get_queryset())

    @extend_schema(request=None, responses={200: s.TransferJobSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, job_id: str | None = None) -> Response:
        """Cancel the job's unfinished files."""
        job = cancel_job(self.get_object())
        return Response(self.get_serializer(self.get_queryset().get(pk=job.pk)).data)


class TransferFileViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = TransferFile.objects.select_related("job").prefetch_related("attempt_rows")
    serializer_class = s.TransferFileDetailSerializer
    filterset_class = filtersets.TransferFileFilterSet
    ordering_fields = ["start_time", "finish_time", "state"]

    def get_queryset(self) -> QuerySet[TransferFile]:
        return visible_jobs(self.request.user, super().get_queryset(), "job__")


class LinkLimitViewSet(viewsets.ModelViewSet):
    permission_classes = [TokenScoped, ReadAnyAuthenticatedWriteAdmin]
    queryset = LinkLimit.objects.all()
    serializer_class = s.LinkLimitSerializer
    filterset_class = filtersets.LinkLimitFilterSet


class StorageElementLimitViewSet(viewsets.ModelViewSet):
    """Inbound/outbound caps per storage element ('*' is the default row), as FTS3's /config/se."""

    permission_classes = [TokenScoped, ReadAnyAuthenticatedWriteAdmin]
    queryset = StorageElementLimit.objects.all()
    serializer_class = s.StorageElementLimitSerializer
    filterset_fields = ["storage_element"]


class ActivityShareViewSet(viewsets.ModelViewSet):
    """Weights of activities sharing a link's slots, as FTS3's /config/activity_shares."""

    permission_classes = [TokenScoped, ReadAnyAuthenticatedWriteAdmin]
    queryset = ActivityShare.objects.all()
    serializer_class = s.ActivityShareSerializer
    filterset_fields = ["activity"]


class LinkPauseViewSet(
    mixins.CreateModelMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Paused links: create to pause, delete to resume (waiting files are dispatched again)."""

    queryset = LinkPause.objects.select_related("created_by")
    serializer_class = s.LinkPauseSerializer
    filterset_fields = ["source_se", "dest_se"]

    def perform_create(self, serializer):  # type: ignore[no-untyped-def]
        serializer.save(created_by=self.request.user)

    def perform_destroy(self, instance):  # type: ignore[no-untyped-def]
        instance.delete()
        enqueue_dispatch_after_change()


class OptimizerDecisionViewSet(viewsets.ReadOnlyModelViewSet):
    """The optimizer's decisions with their rationale, newest first (FTS3's optimizer evolution)."""

    queryset = OptimizerDecision.objects.all()
    serializer_class = s.OptimizerDecisionSerializer
    filterset_fields = ["source_se", "dest_se"]


@extend_schema(responses={200: OpenApiTypes.OBJECT})
@api_view(["GET"])
@permission_classes([AllowAny])
@authentication_classes([])
def scitags_registry(request: Request) -> Response:
    """``GET /api/scitags/``: the platform's SciTags marks in the registry's own format, under the platform's
    activity names (public, as the registry is): what a Rucio server's ``[packet-marking] fetch_url`` reads
    so that its conveyor marks copies as the platform does (transfers/scitags.py). 404 when none are set."""
    from transfers.scitags import current_marks

    marks = current_marks()
    if marks is None:
        return Response({"detail": "No SciTags marking is configured here."}, status=404)
    return Response(marks.as_registry())
