"""URL root of the standalone FTS3-compatible service (SRCNET_ROOT_URLCONF=srcnet.fts3_urls)."""

from django.urls import include, path

from monitoring.views import metrics
from transfers.api.views import scitags_registry

# The service's own request metrics only: the platform's state is the control plane's /metrics.
urlpatterns = [
    path("metrics", metrics, {"with_state": False}, name="metrics"),
    # The SciTags marks the service gives copies without one, in the registry's format, where the Rucio
    # servers that submit here can read them ([packet-marking] fetch_url; docs/network.md).
    path("api/scitags/", scitags_registry, name="fts3-scitags"),
    path("", include("transfers.fts3.urls")),
]
