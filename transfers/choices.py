"""Job, file and attempt states (FTS3's names, so clients of either read the same words)."""

from django.db import models


class JobState(models.TextChoices):
    SUBMITTED = "SUBMITTED", "Submitted"
    ACTIVE = "ACTIVE", "Active"
    FINISHED = "FINISHED", "Finished"
    FINISHEDDIRTY = "FINISHEDDIRTY", "Finished with some files failed"
    FAILED = "FAILED", "Failed"
    CANCELED = "CANCELED", "Canceled"


class FileState(models.TextChoices):
    SUBMITTED = "SUBMITTED", "Submitted"
    ACTIVE = "ACTIVE", "Active"
    FINISHED = "FINISHED", "Finished"
    FAILED = "FAILED", "Failed"
    CANCELED = "CANCELED", "Canceled"
    # A later hop of a multihop job, or an alternative source of a multi-source job, not (yet) used.
    NOT_USED = "NOT_USED", "Not used"


class JobType(models.TextChoices):
    NORMAL = "N", "Normal"
    MULTI_SOURCE = "R", "Multiple sources (first that works)"
    MULTIHOP = "H", "Multihop (each hop after the previous)"


class OptimizerMode(models.IntegerChoices):
    FIXED = 0, "Fixed at max_active"
    CONSERVATIVE = 1, "Conservative"
    NORMAL = 2, "Normal"
    AGGRESSIVE = 3, "Aggressive"


class AttemptState(models.TextChoices):
    RUNNING = "RUNNING", "Running"
    SUCCEEDED = "SUCCEEDED", "Succeeded"
    FAILED = "FAILED", "Failed"


class ChecksumMode(models.TextChoices):
    BOTH = "both", "Source and destination"
    SOURCE = "source", "Source only"
    TARGET = "target", "Destination only"
    NONE = "none", "No verification"


TERMINAL_FILE_STATES = (FileState.FINISHED, FileState.FAILED, FileState.CANCELED)
SETTLED_FILE_STATES = (*TERMINAL_FILE_STATES, FileState.NOT_USED)
TERMINAL_JOB_STATES = (JobState.FINISHED, JobState.FINISHEDDIRTY, JobState.FAILED, JobState.CANCELED)
