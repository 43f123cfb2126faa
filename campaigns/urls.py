from django.urls import path

from . import views

app_name = "campaigns"
urlpatterns = [
    path("", views.campaign_list, name="list"),
    path("new/", views.campaign_new, name="new"),
    path("<int:pk>/", views.campaign_detail, name="detail"),
    path("<int:pk>/<str:action>/", views.campaign_action, name="action"),
    path("<int:pk>/score.json", views.campaign_score, name="score"),
    path("<int:pk>/files/<str:filename>", views.campaign_file, name="file"),
]
