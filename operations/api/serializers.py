from rest_framework import serializers

from ..models import AuditEvent


class AuditEventSerializer(serializers.ModelSerializer):
    class Meta:
        model = AuditEvent
        fields = ["id", "time", "username", "action", "target_type", "target_id", "target", "details"]
        read_only_fields = fields
