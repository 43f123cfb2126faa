from django.urls import path

from . import views

app_name = "consistency"
urlpatterns = [
    path("", views.checks, name="checks"),
    path("new/", views.start, name="start"),
    path("<int:pk>/", views.check, name="check"),
    path("findings/<int:pk>/<str:decision>/", views.dark_file, name="dark-file"),
]
