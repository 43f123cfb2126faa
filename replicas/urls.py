from django.urls import path

from . import views

app_name = "replicas"
urlpatterns = [
    path("products/", views.products, name="products"),
    path("products/<int:pk>/", views.product, name="product"),
]
