"""Enumerations of the consistency checks."""

from django.db import models


class CheckMode(models.TextChoices):
    # Every file under the endpoint's prefix, listed: finds lost, corrupt (by size) and dark files.
    LIST = "list", "List the storage"
    # Only the replicas the platform knows, one stat each: finds lost and corrupt files, never dark ones.
    STAT = "stat", "Stat the known replicas"


class CheckState(models.TextChoices):
    RUNNING = "running", "Running"
    COMPLETE = "complete", "Complete"
    # Ended, but part of the storage could not be read (its errors say which): nothing there was judged.
    INCOMPLETE = "incomplete", "Incomplete"
    FAILED = "failed", "Failed"


class FindingKind(models.TextChoices):
    LOST = "lost", "Lost: known to the platform, absent at the site"
    CORRUPT = "corrupt", "Corrupt: size or adler32 differs"
    DARK = "dark", "Dark: at the site, unknown to the platform"


class FindingAction(models.TextChoices):
    NONE = "", "None yet"
    HEALING = "healing", "A copy planned to heal the replica"
    NO_SOURCE = "no_source", "No available replica left to heal it from"
    RUCIO = "rucio", "Declared to Rucio"
    REMOVED = "removed", "Removed by an operator"
    KEPT = "kept", "Kept by an operator"
