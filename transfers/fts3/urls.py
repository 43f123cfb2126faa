"""FTS3 REST routes (mounted at /fts3/ in the portal, and at / by the standalone service)."""

from django.urls import re_path

from . import views
from .config import views as config

ID_LIST = r"(?P<ids>[0-9a-fA-F-]+(?:,[0-9a-fA-F-]+)*)"
ONE_ID = r"(?P<job_id>[0-9a-fA-F-]+)"

urlpatterns = [
    re_path(r"^$", views.api_version, name="fts3-root"),
    re_path(r"^api-version/?$", views.api_version),
    re_path(r"^whoami/?$", views.whoami, name="fts3-whoami"),
    re_path(r"^delegation/(?P<delegation_id>[^/]+)/?$", views.delegation),
    re_path(r"^jobs/?$", views.jobs, name="fts3-jobs"),
    re_path(rf"^jobs/{ONE_ID}/files/?$", views.job_files),
    re_path(rf"^jobs/{ONE_ID}/dm/?$", views.job_dm),
    re_path(rf"^jobs/{ID_LIST}/?$", views.job_detail, name="fts3-job"),
    # FTS3's configuration API (its "config" role).
    re_path(r"^config/links/?$", config.link_collection, name="fts3-config-links"),
    re_path(r"^config/links/(?P<name>[^/]+)/?$", config.link_item, name="fts3-config-link"),
    re_path(r"^config/se/?$", config.storage, name="fts3-config-se"),
    re_path(r"^config/activity_shares/?$", config.share_collection, name="fts3-config-shares"),
    re_path(r"^config/activity_shares/(?P<vo>[^/]+)/?$", config.share_item, name="fts3-config-vo-shares"),
]
