"""The audit trail of operator actions."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from .choices import AuditAction, TargetType


class AuditEvent(models.Model):
    """One operator action: who, when, what, on which object, with the details needed to reconstruct it.

    Written by the operations services in the same transaction as the action, so an action without its
    event (or an event for an action that rolled back) cannot exist."""

    time = models.DateTimeField(auto_now_add=True, db_index=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # Kept verbatim so the trail still names the operator after the account is removed.
    username = models.CharField(max_length=150)
    action = models.CharField(max_length=32, choices=AuditAction.choices)
    target_type = models.CharField(max_length=16, choices=TargetType.choices)
    target_id = models.CharField(max_length=64)
    target = models.CharField(max_length=255, help_text="The target's name when the action ran")
    details = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-time", "-id"]
        indexes = [models.Index(fields=["target_type", "target_id"])]

    def __str__(self) -> str:
        return f"{self.time:%Y-%m-%d %H:%M:%S} {self.username} {self.action} {self.target}"
