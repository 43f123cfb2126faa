from django.contrib import admin

from .models import Project


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ["code", "title", "proprietary_days", "created"]
    search_fields = ["code", "title"]
    filter_horizontal = ["members"]
