"""URL root of the standalone FTS3-compatible service (SRCNET_ROOT_URLCONF=srcnet.fts3_urls)."""

from django.urls import include, path

urlpatterns = [path("", include("transfers.fts3.urls"))]
