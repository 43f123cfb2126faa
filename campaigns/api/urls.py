from rest_framework.routers import SimpleRouter

from . import views

router = SimpleRouter()
router.register("", views.CampaignViewSet, basename="campaign")
urlpatterns = router.urls
