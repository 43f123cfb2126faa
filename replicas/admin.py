from django.contrib import admin

from .models import DataProduct, PolicyShare, ProductFile, Replica, ReplicaPolicy


class ProductFileInline(admin.TabularInline):
    model = ProductFile
    extra = 0


class PolicyShareInline(admin.TabularInline):
    model = PolicyShare
    extra = 0


@admin.register(DataProduct)
class DataProductAdmin(admin.ModelAdmin):
    list_display = ["scope", "name", "telescope", "state", "priority", "created"]
    list_filter = ["state", "telescope"]
    inlines = [ProductFileInline]


@admin.register(ReplicaPolicy)
class ReplicaPolicyAdmin(admin.ModelAdmin):
    list_display = ["name", "telescope", "kind", "is_active"]
    inlines = [PolicyShareInline]


@admin.register(Replica)
class ReplicaAdmin(admin.ModelAdmin):
    list_display = ["product", "endpoint", "state", "policy", "updated"]
    list_filter = ["state"]
