"""Enumerations of the replicas models."""

from django.db import models


class ReplicaState(models.TextChoices):
    PLANNED = "planned", "Planned"
    COPYING = "copying", "Copying"
    AVAILABLE = "available", "Available"
    FAILED = "failed", "Failed"
    # Found damaged at its storage by a consistency check (consistency/): never shown available again until
    # a copy heals it.
    LOST = "lost", "Lost (absent at its storage)"
    CORRUPT = "corrupt", "Corrupt (size or adler32 differs at its storage)"


class PolicyKind(models.TextChoices):
    """The four AENEAS replica scenarios (the planner's ``one_replica`` is ``weighted_share`` here)."""

    WEIGHTED_SHARE = "weighted_share", "1 replica by weighted share"
    TWO_REPLICAS = "two_replicas", "2 replicas: redistribution from the SRC to its partner SRC"
    FULL_COPY = "full_copy", "Full copy at one SRC, besides the share SRC"
    DISTRIBUTION = "distribution", "1 replica, relayed through a distribution centre (multihop)"


class DegradeStep(models.TextChoices):
    """What the planner gives up, in a policy's order, as a telescope's SDP buffer fills."""

    DEFER_SECOND_COPIES = "defer_second_copies", "Defer second copies"
    RELAY = "relay", "Relay through the distribution centre"


DEFAULT_DEGRADE_ORDER = [DegradeStep.DEFER_SECOND_COPIES.value, DegradeStep.RELAY.value]


class ProductState(models.TextChoices):
    REGISTERED = "registered", "Registered at the SDP"
    PLACING = "placing", "Being placed"
    PLACED = "placed", "All replicas available"
    FAILED = "failed", "A replica failed"


class ProductType(models.TextChoices):
    """What an observatory data product is (the SKA's observatory data product kinds a search names)."""

    VISIBILITIES = "visibilities", "Calibrated visibilities"
    CONTINUUM_IMAGE = "continuum_image", "Continuum image"
    SPECTRAL_CUBE = "spectral_cube", "Spectral line cube"
    PULSAR_TIMING = "pulsar_timing", "Pulsar timing data"
    CALIBRATION = "calibration", "Calibration tables"
    OTHER = "other", "Other"
