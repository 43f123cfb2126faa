from django.urls import path
from rest_framework.routers import DefaultRouter

from . import views

router = DefaultRouter()
router.register("tokens", views.ApiTokenViewSet)
urlpatterns = [path("sign-on/", views.sign_on, name="sign-on"), *router.urls]
