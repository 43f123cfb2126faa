"""What a consistency check compared and what it found (docs/reliability.md, "Storage consistency")."""

from __future__ import annotations

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from .choices import CheckMode, CheckState, FindingAction, FindingKind

# A check keeps at most this many of the errors that left part of the storage unchecked (their count is
# kept in full): a site that refuses every stat must not write a million rows of the same sentence.
MAX_ERRORS_KEPT = 50


class ConsistencyCheck(models.Model):
    """One comparison of what the platform believes an endpoint holds with what its storage holds."""

    endpoint = models.ForeignKey(
        "topology.StorageEndpoint", on_delete=models.PROTECT, related_name="consistency_checks"
    )
    mode = models.CharField(max_length=8, choices=CheckMode.choices, default=CheckMode.LIST)
    checksum_fraction = models.FloatField(
        default=0.0,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="The share of the files found whole whose adler32 is read again from their bytes",
    )
    dark_grace_seconds = models.PositiveIntegerField(
        default=86400, help_text="A file unknown to the platform is dark only when older than this"
    )
    requested_by = models.CharField(max_length=150, blank=True, help_text="Empty: the schedule")
    state = models.CharField(max_length=12, choices=CheckState.choices, default=CheckState.RUNNING)
    started = models.DateTimeField(auto_now_add=True, db_index=True)
    claimed = models.DateTimeField(
        null=True, blank=True, help_text="When a worker took it (once: a task delivered twice runs once)"
    )
    finished = models.DateTimeField(null=True, blank=True)
    files_listed = models.PositiveBigIntegerField(
        default=0, help_text="Files the listing returned (list mode)"
    )
    files_checked = models.PositiveBigIntegerField(default=0, help_text="Known replica files judged")
    checksums_read = models.PositiveBigIntegerField(default=0)
    lost = models.PositiveBigIntegerField(default=0)
    corrupt = models.PositiveBigIntegerField(default=0)
    dark = models.PositiveBigIntegerField(default=0)
    unchecked = models.PositiveBigIntegerField(
        default=0, help_text="Known replica files that could not be judged (a listing or a read failed)"
    )
    errors = models.JSONField(default=list, blank=True, help_text="What could not be read, and why")
    error_count = models.PositiveBigIntegerField(default=0)

    class Meta:
        ordering = ["-started", "-id"]
        indexes = [models.Index(fields=["endpoint", "state", "-started"], name="check_endpoint_state")]

    def __str__(self) -> str:
        return f"consistency check {self.pk} of {self.endpoint}"

    def add_error(self, where: str, why: str) -> None:
        self.error_count += 1
        if len(self.errors) < MAX_ERRORS_KEPT:
            self.errors.append(f"{where}: {why}")


class Finding(models.Model):
    """One difference a check found: a replica's file lost or corrupt, or a dark file."""

    check_run = models.ForeignKey(ConsistencyCheck, on_delete=models.CASCADE, related_name="findings")
    kind = models.CharField(max_length=8, choices=FindingKind.choices)
    path = models.TextField(help_text="Below the endpoint's prefix")
    replica = models.ForeignKey(
        "replicas.Replica", on_delete=models.SET_NULL, null=True, blank=True, related_name="findings"
    )
    expected_size = models.BigIntegerField(null=True, blank=True)
    found_size = models.BigIntegerField(null=True, blank=True)
    expected_adler32 = models.CharField(max_length=8, blank=True)
    found_adler32 = models.CharField(max_length=8, blank=True)
    modified = models.DateTimeField(
        null=True, blank=True, help_text="The file's time at the site (dark files)"
    )
    action = models.CharField(max_length=12, choices=FindingAction.choices, blank=True, default="")
    acted = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["check_run", "kind", "path"]
        indexes = [models.Index(fields=["kind", "action"], name="finding_kind_action")]

    def __str__(self) -> str:
        return f"{self.kind} {self.path}"


class ListedFile(models.Model):
    """A file a list-mode check found at the storage; compared in SQL with the catalogue, then deleted."""

    check_run = models.ForeignKey(ConsistencyCheck, on_delete=models.CASCADE, related_name="+")
    path = models.TextField()
    size = models.BigIntegerField()
    modified = models.DateTimeField(null=True)

    class Meta:
        indexes = [models.Index(fields=["check_run", "path"], name="listed_file_path")]

    def __str__(self) -> str:
        return self.path


class ListedDirectory(models.Model):
    """A directory a list-mode check saw; ``complete`` once all of it was read (absence below it counts)."""

    check_run = models.ForeignKey(ConsistencyCheck, on_delete=models.CASCADE, related_name="+")
    path = models.TextField(help_text="Below the prefix; empty: the prefix itself")
    complete = models.BooleanField(default=False)

    class Meta:
        indexes = [models.Index(fields=["check_run", "path"], name="listed_dir_path")]

    def __str__(self) -> str:
        return self.path or "/"
