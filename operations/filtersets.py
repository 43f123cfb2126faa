"""Filters shared by the audit trail's API endpoint and portal page."""

import django_filters

from srcnet.api.filters import UtcIsoDateTimeFilter

from .choices import AuditAction, TargetType
from .models import AuditEvent


class AuditEventFilterSet(django_filters.FilterSet):
    action = django_filters.MultipleChoiceFilter(choices=AuditAction.choices)
    target_type = django_filters.ChoiceFilter(choices=TargetType.choices)
    target = django_filters.CharFilter(lookup_expr="icontains")
    after = UtcIsoDateTimeFilter(field_name="time", lookup_expr="gte")

    class Meta:
        model = AuditEvent
        fields = ["username", "action", "target_type", "target_id", "target", "after"]
