"""The REST API's URL tree: one router per app under /api/<app>/."""

from django.urls import include, path

from identity.api.views import PasswordTokenView
from transfers.api.views import scitags_registry

from .views import status

urlpatterns = [
    path("", status, name="api-status"),
    # A personal token for a user name and password; failed sign-ins are limited there as on the login
    # pages (identity.limits).
    path("token/", PasswordTokenView.as_view(), name="api-token"),
    path("identity/", include("identity.api.urls")),
    # The SciTags marks in the registry's format, public (Rucio's [packet-marking] fetch_url reads them).
    path("scitags/", scitags_registry, name="api-scitags"),
    path("topology/", include("topology.api.urls")),
    path("projects/", include("projects.api.urls")),
    path("replicas/", include("replicas.api.urls")),
    path("rules/", include("rules.api.urls")),
    path("transfers/", include("transfers.api.urls")),
    path("schedulers/", include("schedulers.api.urls")),
    path("operations/", include("operations.api.urls")),
    path("campaigns/", include("campaigns.api.urls")),
    path("consistency/", include("consistency.api.urls")),
]
