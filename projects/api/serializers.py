from __future__ import annotations

from django.contrib.auth import get_user_model
from rest_framework import serializers

from srcnet.api.serializers import LookupSlugField

from ..models import Project


class ProjectSerializer(serializers.ModelSerializer):
    """A project; its members by username."""

    members = LookupSlugField(
        slug_field="username", queryset=get_user_model().objects.all(), many=True, required=False
    )

    class Meta:
        model = Project
        fields = ["id", "code", "title", "proprietary_days", "members", "created"]
        read_only_fields = ["created"]
