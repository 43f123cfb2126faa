"""The REST API's URL tree: one router per app under /api/<app>/."""

from django.urls import include, path
from rest_framework.parsers import FormParser, MultiPartParser

from identity.views import LimitedObtainAuthToken

from .parsers import BoundedJSONParser
from .views import status

urlpatterns = [
    path("", status, name="api-status"),
    # DRF's token view brings its own parsers: the bounded JSON one replaces its JSON parser. Failed
    # sign-ins are limited there as on the login pages (identity.limits).
    path(
        "token/",
        LimitedObtainAuthToken.as_view(parser_classes=(FormParser, MultiPartParser, BoundedJSONParser)),
        name="api-token",
    ),
    path("topology/", include("topology.api.urls")),
    path("projects/", include("projects.api.urls")),
    path("replicas/", include("replicas.api.urls")),
    path("rules/", include("rules.api.urls")),
    path("transfers/", include("transfers.api.urls")),
    path("schedulers/", include("schedulers.api.urls")),
    path("operations/", include("operations.api.urls")),
    path("campaigns/", include("campaigns.api.urls")),
]
