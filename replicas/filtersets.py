"""Filters shared by the products/replicas API and portal pages."""

import django_filters
from django.db.models import Q, QuerySet

from srcnet.api.filters import UtcIsoDateTimeFilter

from .choices import ProductState, ProductType, ReplicaState
from .models import DataProduct, Replica, ReplicaPolicy


class DataProductFilterSet(django_filters.FilterSet):
    q = django_filters.CharFilter(method="search", label="Search")
    telescope = django_filters.CharFilter(field_name="telescope__name")
    source = django_filters.CharFilter(field_name="source__name")
    state = django_filters.MultipleChoiceFilter(choices=ProductState.choices)
    replica_at = django_filters.CharFilter(field_name="replicas__endpoint__name", label="Has a replica at")
    created_after = UtcIsoDateTimeFilter(field_name="created", lookup_expr="gte")
    created_before = UtcIsoDateTimeFilter(field_name="created", lookup_expr="lt")
    project = django_filters.CharFilter(field_name="project__code")
    observation_id = django_filters.CharFilter()
    product_type = django_filters.MultipleChoiceFilter(choices=ProductType.choices)

    class Meta:
        model = DataProduct
        fields = ["scope", "name", "telescope", "source", "state", "priority", "project", "observation_id"]

    def search(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        scope, _, did_name = value.partition(":")
        if did_name:
            return queryset.filter(scope=scope, name__icontains=did_name)
        return queryset.filter(Q(name__icontains=value) | Q(scope__icontains=value))


class ReplicaFilterSet(django_filters.FilterSet):
    endpoint = django_filters.CharFilter(field_name="endpoint__name")
    site = django_filters.CharFilter(field_name="endpoint__site__name")
    state = django_filters.MultipleChoiceFilter(choices=ReplicaState.choices)
    policy = django_filters.CharFilter(field_name="policy__name")
    scope = django_filters.CharFilter(field_name="product__scope")

    class Meta:
        model = Replica
        fields = ["product", "endpoint", "site", "state", "policy", "scope"]


class ReplicaPolicyFilterSet(django_filters.FilterSet):
    telescope = django_filters.CharFilter(field_name="telescope__name")

    class Meta:
        model = ReplicaPolicy
        fields = ["name", "telescope", "kind", "is_active"]
