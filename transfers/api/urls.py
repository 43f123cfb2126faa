from rest_framework.routers import DefaultRouter

from . import views

router = DefaultRouter()
router.register("jobs", views.TransferJobViewSet)
router.register("files", views.TransferFileViewSet)
router.register("link-limits", views.LinkLimitViewSet)
urlpatterns = router.urls
