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
TERMINAL_JOB_STATES = (JobState.FINISHED, JobState.FINISHEDDIRTY, JobState.FAILED, JobState.CANCELED)
