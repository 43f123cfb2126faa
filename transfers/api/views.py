"""REST endpoints of the transfer service (the platform's own view; the FTS3 protocol comes separately)."""

from __future__ import annotations

from django.db.models import Prefetch
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from .. import filtersets
from ..models import LinkLimit, TransferFile, TransferJob
from ..services import cancel_job
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


class LinkLimitViewSet(viewsets.ModelViewSet):
    queryset = LinkLimit.objects.all()
    serializer_class = s.LinkLimitSerializer
    filterset_class = filtersets.LinkLimitFilterSet
