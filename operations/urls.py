from django.urls import path

from . import views

app_name = "operations"
urlpatterns = [
    path("audit/", views.audit, name="audit"),
    path("paths/<int:pk>/pause/", views.pause_path, name="pause-path"),
    path("paths/<int:pk>/resume/", views.resume_path, name="resume-path"),
    path("jobs/<uuid:job_id>/priority/", views.job_priority, name="job-priority"),
    path("jobs/<uuid:job_id>/cancel/", views.job_cancel, name="job-cancel"),
    path("products/<int:pk>/priority/", views.product_priority, name="product-priority"),
    path("products/<int:pk>/reroute/", views.product_reroute, name="product-reroute"),
    path("policies/", views.policies, name="policies"),
    path("policies/new/", views.policy_edit, name="policy-new"),
    path("policies/<int:pk>/", views.policy_edit, name="policy-edit"),
]
