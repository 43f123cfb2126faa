"""REST API of the campaigns: operators create, stop and resume; everyone authenticated reads."""

from __future__ import annotations

import mimetypes

from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import FileResponse, Http404
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from .. import services
from ..models import Campaign
from ..report import report_dir
from . import serializers as s


class CampaignViewSet(
    mixins.CreateModelMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    queryset = Campaign.objects.select_related("created_by")
    serializer_class = s.CampaignSerializer
    filterset_fields = ["state", "mode", "template"]

    def destroy(self, request: Request, *args, **kwargs) -> Response:  # type: ignore[no-untyped-def]
        """Delete a recurring campaign (a template) and its periodic task; its runs stay. 409 otherwise."""
        try:
            services.delete_template(self.get_object())
        except services.CampaignError as exc:
            field, _, message = str(exc).partition(": ")
            return Response({field: [message]}, status=status.HTTP_409_CONFLICT)
        return Response(status=status.HTTP_204_NO_CONTENT)

    def perform_create(self, serializer):  # type: ignore[no-untyped-def]
        try:
            with transaction.atomic():
                serializer.instance = services.create_campaign(
                    user=self.request.user, **serializer.validated_data
                )
        except ValidationError as exc:
            raise serializers.ValidationError(s.validation_detail(exc)) from exc

    def _act(self, fn) -> Response:  # type: ignore[no-untyped-def]
        try:
            campaign = fn(self.get_object())
        except services.CampaignError as exc:
            field, _, message = str(exc).partition(": ")
            return Response({field: [message]}, status=status.HTTP_409_CONFLICT)
        return Response(s.CampaignSerializer(campaign).data)

    @action(detail=True, methods=["post"])
    def stop(self, request: Request, pk: str | None = None) -> Response:
        """Stop generating; what was pushed keeps moving and keeps being scored."""
        return self._act(services.stop)

    @action(detail=True, methods=["post"])
    def resume(self, request: Request, pk: str | None = None) -> Response:
        return self._act(services.resume)

    @extend_schema(responses={200: s.SampleSerializer(many=True)})
    @action(detail=True, methods=["get"])
    def samples(self, request: Request, pk: str | None = None) -> Response:
        """The score's time series, one sample per tick (a real campaign)."""
        rows = self.get_object().samples.all()
        return Response(s.SampleSerializer(rows, many=True).data)

    @extend_schema(responses={(200, "application/octet-stream"): bytes})
    @action(detail=True, methods=["get"], url_path=r"files/(?P<filename>[A-Za-z0-9_.-]+)")
    def files(self, request: Request, pk: str | None = None, filename: str = "") -> FileResponse:
        """One file of the report (samples.csv, summary.json, *.png, ...)."""
        path = report_dir(self.get_object().pk) / filename
        if not path.is_file():
            raise Http404(f"no report file {filename}")
        content_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        return FileResponse(open(path, "rb"), content_type=content_type)
