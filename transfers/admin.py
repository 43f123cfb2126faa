from django.contrib import admin

from .models import ClientIdentity, LinkLimit, TokenIdentity, TransferAttempt, TransferFile, TransferJob


class TransferFileInline(admin.TabularInline):
    model = TransferFile
    extra = 0
    fields = ("file_index", "source_surl", "dest_surl", "state", "attempts", "reason")
    readonly_fields = fields


@admin.register(TransferJob)
class TransferJobAdmin(admin.ModelAdmin):
    list_display = ["job_id", "state", "priority", "activity", "created"]
    list_filter = ["state"]
    inlines = [TransferFileInline]


admin.site.register(TransferAttempt)
admin.site.register(LinkLimit)


@admin.register(ClientIdentity)
class ClientIdentityAdmin(admin.ModelAdmin):
    list_display = ("dn", "user")


@admin.register(TokenIdentity)
class TokenIdentityAdmin(admin.ModelAdmin):
    list_display = ("subject", "issuer", "user")
