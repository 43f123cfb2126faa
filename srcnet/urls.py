"""URL root: portal pages, the REST API under /api/, its OpenAPI schema and docs, the admin."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from monitoring.views import metrics

from . import views

urlpatterns = [
    path("", views.home, name="home"),
    path("login/", auth_views.LoginView.as_view(template_name="srcnet/login.html"), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("topology/", include("topology.urls")),
    path("replicas/", include("replicas.urls")),
    path("rules/", include("rules.urls")),
    path("transfers/", include("transfers.urls")),
    path("scheduler/", include("schedulers.urls")),
    path("operations/", include("operations.urls")),
    path("campaigns/", include("campaigns.urls")),
    path("api/", include("srcnet.api.urls")),
    path("fts3/", include("transfers.fts3.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("metrics", metrics, name="metrics"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
]
