from django.urls import path
from rest_framework.routers import DefaultRouter

from . import views

router = DefaultRouter()
router.register("audit-events", views.AuditEventViewSet)

urlpatterns = [
    path("network/", views.network, name="operations-network"),
    path("flows/", views.flows, name="operations-flows"),
    path("paths/<int:pk>/", views.path_detail, name="operations-path"),
    path("sites/<int:pk>/", views.site_detail, name="operations-site"),
    path("links/<int:pk>/", views.link_detail, name="operations-link"),
    path("tokens/check/", views.token_check, name="operations-token-check"),
    *router.urls,
]
