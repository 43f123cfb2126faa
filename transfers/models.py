"""Transfer jobs, their files, and one row per attempt at copying a file."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

from .choices import AttemptState, ChecksumMode, FileState, JobState
from .storage_urls import storage_element

checksum_validator = RegexValidator(r"^(?i:adler32):[0-9a-fA-F]{8}$", "Use ADLER32:xxxxxxxx.")


class TransferJob(models.Model):
    """A set of file copies submitted together, with the options FTS3 jobs carry."""

    job_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    state = models.CharField(max_length=16, choices=JobState.choices, default=JobState.SUBMITTED)
    priority = models.PositiveSmallIntegerField(
        default=3, validators=[MinValueValidator(1), MaxValueValidator(5)]
    )
    activity = models.CharField(max_length=64, default="default")
    verify_checksum = models.CharField(max_length=8, choices=ChecksumMode.choices, default=ChecksumMode.BOTH)
    overwrite = models.BooleanField(default=False)
    retry = models.PositiveSmallIntegerField(
        default=2, validators=[MaxValueValidator(10)], help_text="Retries after the first attempt"
    )
    retry_delay = models.FloatField(
        default=2.0,
        validators=[MinValueValidator(0.0)],
        help_text="Seconds before the first retry; doubles each time",
    )
    timeout = models.PositiveIntegerField(
        null=True, blank=True, help_text="Seconds per copy; default 600 s + 2 s per MiB"
    )
    metadata = models.JSONField(default=dict, blank=True)
    submitter = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    reason = models.TextField(blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)
    finished = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]
        indexes = [models.Index(fields=["state", "-priority", "created"])]

    def __str__(self) -> str:
        return str(self.job_id)


class TransferFile(models.Model):
    """One copy from a source URL to a destination URL."""

    job = models.ForeignKey(TransferJob, on_delete=models.CASCADE, related_name="files")
    file_index = models.PositiveIntegerField()
    source_surl = models.CharField(max_length=1024)
    dest_surl = models.CharField(max_length=1024)
    source_se = models.CharField(max_length=255, editable=False)
    dest_se = models.CharField(max_length=255, editable=False)
    filesize = models.BigIntegerField(null=True, blank=True, validators=[MinValueValidator(0)])
    checksum = models.CharField(max_length=48, blank=True, validators=[checksum_validator])
    state = models.CharField(max_length=16, choices=FileState.choices, default=FileState.SUBMITTED)
    reason = models.TextField(blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    retry_after = models.DateTimeField(null=True, blank=True)
    start_time = models.DateTimeField(null=True, blank=True)
    finish_time = models.DateTimeField(null=True, blank=True)
    transferred_bytes = models.BigIntegerField(default=0)
    duration_seconds = models.FloatField(null=True, blank=True)
    source_checksum = models.CharField(max_length=16, blank=True)
    dest_checksum = models.CharField(max_length=16, blank=True)
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["job", "file_index"]
        constraints = [models.UniqueConstraint(fields=["job", "file_index"], name="unique_file_index")]
        indexes = [models.Index(fields=["state", "source_se", "dest_se"])]

    def __str__(self) -> str:
        return f"{self.source_surl} -> {self.dest_surl}"

    def save(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.source_se = storage_element(self.source_surl)
        self.dest_se = storage_element(self.dest_surl)
        super().save(*args, **kwargs)

    def clean(self) -> None:
        super().clean()
        errors = {}
        for name in ("source_surl", "dest_surl"):
            try:
                storage_element(getattr(self, name))
            except ValueError as exc:
                errors[name] = str(exc)
        if not errors and self.source_surl == self.dest_surl:
            errors["dest_surl"] = "The destination must differ from the source."
        if errors:
            raise ValidationError(errors)

    @property
    def throughput_bps(self) -> float | None:
        if not self.duration_seconds or self.state != FileState.FINISHED:
            return None
        return self.transferred_bytes * 8 / self.duration_seconds


class TransferAttempt(models.Model):
    """One try at one file. The row makes a redelivered task message a no-op: a task runs an attempt
    only after claiming it, and a claimed or finished attempt is never run again."""

    file = models.ForeignKey(TransferFile, on_delete=models.CASCADE, related_name="attempt_rows")
    number = models.PositiveSmallIntegerField()
    state = models.CharField(max_length=16, choices=AttemptState.choices, default=AttemptState.RUNNING)
    claimed = models.DateTimeField(null=True, blank=True)
    started = models.DateTimeField(auto_now_add=True)
    finished = models.DateTimeField(null=True, blank=True)
    reason = models.TextField(blank=True)
    worker = models.CharField(max_length=255, blank=True)

    class Meta:
        ordering = ["file", "number"]
        constraints = [models.UniqueConstraint(fields=["file", "number"], name="unique_attempt_number")]

    def __str__(self) -> str:
        return f"attempt {self.number} of file {self.file_id}"


class LinkLimit(models.Model):
    """The most files copied at once from one storage element to another ('*' matches any)."""

    source_se = models.CharField(max_length=255, default="*")
    dest_se = models.CharField(max_length=255, default="*")
    max_active = models.PositiveIntegerField(validators=[MinValueValidator(1), MaxValueValidator(10000)])

    class Meta:
        ordering = ["source_se", "dest_se"]
        constraints = [models.UniqueConstraint(fields=["source_se", "dest_se"], name="unique_link_limit")]

    def __str__(self) -> str:
        return f"{self.source_se} -> {self.dest_se}: {self.max_active}"
