"""The REST API's URL tree: one router per app under /api/<app>/."""

from django.urls import include, path
from rest_framework.authtoken.views import obtain_auth_token

from .views import status

urlpatterns = [
    path("", status, name="api-status"),
    path("token/", obtain_auth_token, name="api-token"),
    path("topology/", include("topology.api.urls")),
    path("replicas/", include("replicas.api.urls")),
    path("transfers/", include("transfers.api.urls")),
    path("schedulers/", include("schedulers.api.urls")),
    path("operations/", include("operations.api.urls")),
    path("campaigns/", include("campaigns.api.urls")),
]
