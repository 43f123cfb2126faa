from django.urls import path

from . import views

app_name = "topology"
urlpatterns = [
    path("map/", views.network_map, name="map"),
    path("sites/", views.sites, name="sites"),
    path("links/", views.links, name="links"),
    path("paths/", views.paths, name="paths"),
    path("storage/", views.storage, name="storage"),
]
