from rest_framework.routers import DefaultRouter

from . import views

router = DefaultRouter()
router.register("products", views.DataProductViewSet)
router.register("replicas", views.ReplicaViewSet)
router.register("policies", views.ReplicaPolicyViewSet)
urlpatterns = router.urls
