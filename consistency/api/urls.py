from rest_framework.routers import DefaultRouter

from . import views

router = DefaultRouter()
router.register("checks", views.ConsistencyCheckViewSet)
router.register("findings", views.FindingViewSet)

urlpatterns = router.urls
