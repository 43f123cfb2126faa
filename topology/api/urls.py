from django.urls import path
from rest_framework.routers import DefaultRouter

from . import views

router = DefaultRouter()
router.register("vrfs", views.VrfViewSet)
router.register("sites", views.SiteViewSet)
router.register("telescopes", views.TelescopeViewSet)
router.register("regional-centres", views.RegionalCentreViewSet)
router.register("points-of-presence", views.PointOfPresenceViewSet)
router.register("storage-endpoints", views.StorageEndpointViewSet)
router.register("dtns", views.DtnViewSet)
router.register("links", views.LinkViewSet)
router.register("paths", views.NetworkPathViewSet)

urlpatterns = [
    path("import/", views.import_view, name="topology-import"),
    path("export/", views.export_view, name="topology-export"),
    *router.urls,
]
