from django.urls import path
from rest_framework.routers import DefaultRouter

from . import views

router = DefaultRouter()
router.register("cycles", views.PushCycleViewSet)
router.register("measurements", views.PathMeasurementViewSet)
router.register("simulations", views.SimulationViewSet)
urlpatterns = [path("plan/", views.plan_preview, name="schedulers-plan"), *router.urls]
