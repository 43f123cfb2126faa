"""Projects through the REST API: operators manage them; any other account reads the ones it belongs to."""

from __future__ import annotations

from django.db.models import QuerySet
from rest_framework import viewsets

from srcnet.roles import is_operator

from ..models import Project
from .serializers import ProjectSerializer


class ProjectViewSet(viewsets.ModelViewSet):
    queryset = Project.objects.prefetch_related("members")
    serializer_class = ProjectSerializer
    filterset_fields = ["code"]

    def get_queryset(self) -> QuerySet[Project]:
        queryset = super().get_queryset()
        if is_operator(self.request.user):
            return queryset
        return queryset.filter(members=self.request.user)
