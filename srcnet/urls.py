"""URL root: portal pages, the REST API under /api/, its OpenAPI schema and docs, the admin."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from identity.views import PortalLoginView, admin_login, sso_callback, sso_login
from monitoring.views import metrics

from . import views

urlpatterns = [
    path("", views.home, name="home"),
    # Both login pages refuse, for a while, an account or an address that failed too often (identity.limits).
    path("login/", PortalLoginView.as_view(), name="login"),
    # Single sign-on through the token issuer (identity/oidc.py): off (404) unless SRCNET_SSO_ISSUER is set.
    path("sso/login/", sso_login, name="sso-login"),
    path("sso/callback/", sso_callback, name="sso-callback"),
    path("admin/login/", admin_login, name="admin-login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("topology/", include("topology.urls")),
    path("replicas/", include("replicas.urls")),
    path("rules/", include("rules.urls")),
    path("transfers/", include("transfers.urls")),
    path("scheduler/", include("schedulers.urls")),
    path("operations/", include("operations.urls")),
    path("campaigns/", include("campaigns.urls")),
    path("storage-checks/", include("consistency.urls")),
    path("api/", include("srcnet.api.urls")),
    path("fts3/", include("transfers.fts3.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("metrics", metrics, name="metrics"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
]
