"""URL root of the standalone FTS3-compatible service (SRCNET_ROOT_URLCONF=srcnet.fts3_urls)."""

from django.urls import include, path

from monitoring.views import metrics

# The service's own request metrics only: the platform's state is the control plane's /metrics.
urlpatterns = [
    path("metrics", metrics, {"with_state": False}, name="metrics"),
    path("", include("transfers.fts3.urls")),
]
