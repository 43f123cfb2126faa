from rest_framework.routers import DefaultRouter

from . import views

router = DefaultRouter()
router.register("rules", views.RuleViewSet)
router.register("subscriptions", views.SubscriptionViewSet)
urlpatterns = router.urls
