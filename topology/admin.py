from django.contrib import admin

from .models import (
    Dtn,
    Link,
    NetworkPath,
    PathHop,
    PointOfPresence,
    RegionalCentre,
    StorageEndpoint,
    Telescope,
    Vrf,
)


class PathHopInline(admin.TabularInline):
    model = PathHop
    extra = 0


@admin.register(NetworkPath)
class NetworkPathAdmin(admin.ModelAdmin):
    list_display = ["name", "source", "destination", "rtt_ms", "capacity_bps", "is_computed"]
    list_filter = ["is_computed"]
    inlines = [PathHopInline]


@admin.register(Link)
class LinkAdmin(admin.ModelAdmin):
    list_display = ["name", "a_end", "b_end", "kind", "capacity_bps", "rtt_ms", "is_up"]
    list_filter = ["kind", "is_up"]


for model in (Telescope, RegionalCentre, PointOfPresence, StorageEndpoint, Dtn, Vrf):
    admin.site.register(model)
