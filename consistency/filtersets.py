"""Filters of the consistency checks' portal page."""

import django_filters

from .choices import CheckMode, CheckState
from .models import ConsistencyCheck


class ConsistencyCheckFilterSet(django_filters.FilterSet):
    endpoint = django_filters.CharFilter(field_name="endpoint__name")
    state = django_filters.ChoiceFilter(choices=CheckState.choices)
    mode = django_filters.ChoiceFilter(choices=CheckMode.choices)

    class Meta:
        model = ConsistencyCheck
        fields = ["endpoint", "state", "mode"]
