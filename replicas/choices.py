"""Enumerations of the replicas models."""

from django.db import models


class ReplicaState(models.TextChoices):
    PLANNED = "planned", "Planned"
    COPYING = "copying", "Copying"
    AVAILABLE = "available", "Available"
    FAILED = "failed", "Failed"


class PolicyKind(models.TextChoices):
    WEIGHTED_SHARE = "weighted_share", "1 replica by weighted share"


class ProductState(models.TextChoices):
    REGISTERED = "registered", "Registered at the SDP"
    PLACING = "placing", "Being placed"
    PLACED = "placed", "All replicas available"
    FAILED = "failed", "A replica failed"
