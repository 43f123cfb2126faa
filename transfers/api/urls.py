from rest_framework.routers import DefaultRouter

from . import views

router = DefaultRouter()
router.register("jobs", views.TransferJobViewSet)
router.register("files", views.TransferFileViewSet)
router.register("link-limits", views.LinkLimitViewSet)
router.register("storage-limits", views.StorageElementLimitViewSet)
router.register("activity-shares", views.ActivityShareViewSet)
router.register("link-pauses", views.LinkPauseViewSet)
router.register("optimizer-decisions", views.OptimizerDecisionViewSet)
urlpatterns = router.urls
