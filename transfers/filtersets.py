"""Filters shared by the transfers API and portal pages."""

import django_filters

from srcnet.api.filters import UtcIsoDateTimeFilter

from .choices import FileState, JobState
from .models import LinkLimit, TransferFile, TransferJob


class TransferJobFilterSet(django_filters.FilterSet):
    state = django_filters.MultipleChoiceFilter(choices=JobState.choices)
    product = django_filters.CharFilter(field_name="metadata__product")
    created_after = UtcIsoDateTimeFilter(field_name="created", lookup_expr="gte")

    class Meta:
        model = TransferJob
        fields = ["job_id", "state", "priority", "activity", "product"]


class TransferFileFilterSet(django_filters.FilterSet):
    state = django_filters.MultipleChoiceFilter(choices=FileState.choices)
    job = django_filters.UUIDFilter(field_name="job__job_id")
    source_se = django_filters.CharFilter()
    dest_se = django_filters.CharFilter()

    class Meta:
        model = TransferFile
        fields = ["job", "state", "source_se", "dest_se"]


class LinkLimitFilterSet(django_filters.FilterSet):
    class Meta:
        model = LinkLimit
        fields = ["source_se", "dest_se"]
