from django.urls import path

from . import views

app_name = "transfers"
urlpatterns = [
    path("", views.files, name="files"),
    path("flows/", views.flows, name="flows"),
]
