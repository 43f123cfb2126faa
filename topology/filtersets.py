"""One FilterSet per model, serving both the REST list endpoints and the portal list pages."""

import django_filters
from django.db.models import Q, QuerySet

from .choices import LinkKind, Region, SiteKind, StorageRole, TpcScheme, VrfScope
from .models import (
    Dtn,
    Link,
    NetworkPath,
    PointOfPresence,
    RegionalCentre,
    Site,
    StorageEndpoint,
    Telescope,
    Vrf,
)


class SearchMixin(django_filters.FilterSet):
    q = django_filters.CharFilter(method="search", label="Search")

    def search(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return queryset.filter(Q(name__icontains=value) | Q(description__icontains=value))


class SiteFilterSet(SearchMixin):
    kind = django_filters.MultipleChoiceFilter(choices=SiteKind.choices)
    region = django_filters.MultipleChoiceFilter(choices=Region.choices)
    vrf = django_filters.CharFilter(field_name="vrf__name")

    class Meta:
        model = Site
        fields = ["name", "kind", "region", "country", "vrf"]


class TelescopeFilterSet(SiteFilterSet):
    class Meta:
        model = Telescope
        fields = ["name", "region", "country", "vrf"]


class RegionalCentreFilterSet(SiteFilterSet):
    class Meta:
        model = RegionalCentre
        fields = ["name", "region", "country", "vrf", "is_distribution_centre"]


class PointOfPresenceFilterSet(SiteFilterSet):
    class Meta:
        model = PointOfPresence
        fields = ["name", "region", "country", "vrf", "operator"]


class VrfFilterSet(SearchMixin):
    scope = django_filters.MultipleChoiceFilter(choices=VrfScope.choices)
    parent = django_filters.CharFilter(field_name="parent__name")

    class Meta:
        model = Vrf
        fields = ["name", "scope", "parent", "route_distinguisher"]


class StorageEndpointFilterSet(django_filters.FilterSet):
    q = django_filters.CharFilter(field_name="name", lookup_expr="icontains", label="Search")
    site = django_filters.CharFilter(field_name="site__name")
    role = django_filters.MultipleChoiceFilter(choices=StorageRole.choices)
    tpc_scheme = django_filters.ChoiceFilter(choices=TpcScheme.choices)

    class Meta:
        model = StorageEndpoint
        fields = ["name", "site", "role", "hostname", "tpc_scheme", "is_active"]


class DtnFilterSet(django_filters.FilterSet):
    site = django_filters.CharFilter(field_name="site__name")

    class Meta:
        model = Dtn
        fields = ["name", "site", "hostname", "tuning_profile"]


class LinkFilterSet(django_filters.FilterSet):
    q = django_filters.CharFilter(field_name="name", lookup_expr="icontains", label="Search")
    site = django_filters.CharFilter(method="touching", label="Either end")
    kind = django_filters.MultipleChoiceFilter(choices=LinkKind.choices)
    vrf = django_filters.CharFilter(field_name="vrfs__name")
    capacity_min = django_filters.NumberFilter(field_name="capacity_bps", lookup_expr="gte")
    rtt_max = django_filters.NumberFilter(field_name="rtt_ms", lookup_expr="lte")

    class Meta:
        model = Link
        fields = ["name", "kind", "owner", "is_up", "vrf", "site"]

    def touching(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return queryset.filter(Q(a_end__name=value) | Q(b_end__name=value))


class NetworkPathFilterSet(django_filters.FilterSet):
    q = django_filters.CharFilter(field_name="name", lookup_expr="icontains", label="Search")
    source = django_filters.CharFilter(field_name="source__name")
    destination = django_filters.CharFilter(field_name="destination__name")
    source_kind = django_filters.MultipleChoiceFilter(field_name="source__kind", choices=SiteKind.choices)
    destination_kind = django_filters.MultipleChoiceFilter(
        field_name="destination__kind", choices=SiteKind.choices
    )
    vrf = django_filters.CharFilter(field_name="vrf__name")
    link = django_filters.CharFilter(field_name="links__name", label="Through link")
    rtt_max = django_filters.NumberFilter(field_name="rtt_ms", lookup_expr="lte")

    class Meta:
        model = NetworkPath
        fields = ["name", "source", "destination", "vrf", "is_computed", "link"]
