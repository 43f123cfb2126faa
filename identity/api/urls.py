from rest_framework.routers import DefaultRouter

from . import views

router = DefaultRouter()
router.register("tokens", views.ApiTokenViewSet)
urlpatterns = router.urls
