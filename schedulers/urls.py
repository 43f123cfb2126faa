from django.urls import path

from . import views

app_name = "schedulers"
urlpatterns = [
    path("cycles/", views.cycles, name="cycles"),
    path("cycles/<int:pk>/", views.cycle, name="cycle"),
    path("simulations/", views.simulations, name="simulations"),
    path("simulations/<int:pk>/", views.simulation, name="simulation"),
    path("simulations/<int:pk>/files/<str:filename>", views.simulation_file, name="simulation-file"),
]
