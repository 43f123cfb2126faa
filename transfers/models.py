"""Transfer jobs, their files, and one row per attempt at copying a file."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

from .choices import AttemptState, ChecksumMode, FileState, JobState, JobType, OptimizerMode
from .storage_urls import default_symbolicname, storage_element

checksum_validator = RegexValidator(r"^(?i:adler32):[0-9a-fA-F]{8}$", "Use ADLER32:xxxxxxxx.")


class TransferJob(models.Model):
    """A set of file copies submitted together, with the options FTS3 jobs carry."""

    job_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    job_type = models.CharField(max_length=1, choices=JobType.choices, default=JobType.NORMAL)
    state = models.CharField(max_length=16, choices=JobState.choices, default=JobState.SUBMITTED)
    vo_name = models.CharField(max_length=64, default="ska")
    user_dn = models.CharField(max_length=255, blank=True)
    sid = models.CharField(
        max_length=64,
        null=True,
        blank=True,
        unique=True,
        help_text="The submitter's id of a deterministic job (FTS3 id_generator)",
    )
    expires = models.DateTimeField(
        null=True, blank=True, help_text="max_time_in_queue: fail what still waits"
    )
    internal_params = models.JSONField(
        default=dict, blank=True, help_text="nostreams, buffer_size, strict_copy, ... as submitted"
    )
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
        # A service account (Rucio's conveyor) submits jobs through the FTS3 endpoint without being an
        # operator (srcnet.roles).
        permissions = [("submit_transfers", "Can submit and manage its own transfer jobs")]

    def __str__(self) -> str:
        return str(self.job_id)


class TransferFile(models.Model):
    """One copy from a source URL to a destination URL."""

    job = models.ForeignKey(TransferJob, on_delete=models.CASCADE, related_name="files")
    # Shared by the alternative sources of one file (a multi-source job), as in FTS3.
    file_index = models.PositiveIntegerField()
    activity = models.CharField(max_length=64, default="default")
    scitag = models.PositiveIntegerField(null=True, blank=True)
    # Whether ``scitag`` is the client's own (Rucio's conveyor marks its files by its [packet-marking]),
    # rather than the service's mark for the file's activity (transfers/scitags.py).
    scitag_from_client = models.BooleanField(
        default=False, help_text="scitag came with the submission (else: the service's mark for the activity)"
    )
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
    # While the file copies: when ``transferred_bytes`` was last seen at the destination (the stall watch's
    # look, written with the attempt's heartbeat); null once it ends or before any progress is seen.
    progress_at = models.DateTimeField(null=True, blank=True)
    # ... and the pace it kept over its last looks (bytes/s; null until the looks span PACE_SPAN_SECONDS).
    progress_bps = models.FloatField(null=True, blank=True)
    duration_seconds = models.FloatField(null=True, blank=True)
    # The tokens handed over with the file (FTS3's per-file source_tokens / destination_tokens), if any: one
    # row per distinct token of the job, which the files that came with it share.
    source_token = models.ForeignKey(
        "SubmittedToken", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    destination_token = models.ForeignKey(
        "SubmittedToken", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    source_checksum = models.CharField(max_length=16, blank=True)
    dest_checksum = models.CharField(max_length=16, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    # An attempt failed (or its worker vanished) after the copy had started: part of a file may be at the
    # destination. The next attempt overwrites it; a file that ends FAILED has it removed.
    dest_dirty = models.BooleanField(default=False)
    # The message that runs its current attempt: a copy session's (several small files of one job and link,
    # copied one after another by one worker process, as FTS3's session reuse does) or the attempt's own.
    # A session holds one copy slot, so the dispatcher counts the sessions of a link, not its files.
    copy_session = models.CharField(max_length=64, blank=True, editable=False)

    class Meta:
        ordering = ["job", "file_index"]
        indexes = [
            models.Index(fields=["state", "source_se", "dest_se"]),
            models.Index(fields=["job", "file_index"]),
        ]

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
    # Renewed by the worker while it copies; an attempt whose heartbeat stops is reaped (its worker died).
    heartbeat = models.DateTimeField(null=True, blank=True)
    started = models.DateTimeField(auto_now_add=True)
    finished = models.DateTimeField(null=True, blank=True)
    reason = models.TextField(blank=True)
    worker = models.CharField(max_length=255, blank=True)
    task_id = models.CharField(max_length=64, blank=True, help_text="The Celery task running it (to stop it)")
    copy_params = models.JSONField(
        default=dict,
        blank=True,
        help_text="gfal2's transfer parameters for the copy (nbstreams, tcp_buffersize, timeout, checksum)",
    )

    class Meta:
        ordering = ["file", "number"]
        constraints = [models.UniqueConstraint(fields=["file", "number"], name="unique_attempt_number")]

    def __str__(self) -> str:
        return f"attempt {self.number} of file {self.file_id}"


class SubmittedToken(models.Model):
    """A storage token handed over with a job's files (FTS3's per-file ``source_tokens`` /
    ``destination_tokens``), once per distinct token of the job, kept sealed: the service reads it back only
    to copy (transfers/submitted_tokens.py). ``token_id`` names it everywhere else."""

    job = models.ForeignKey(TransferJob, on_delete=models.CASCADE, related_name="submitted_tokens")
    token_id = models.CharField(max_length=32, help_text="SHA-256 prefix of the token as it was submitted")
    managed = models.BooleanField(
        default=True, help_text="Exchanged at submission and refreshed by the service (FTS 3.14 managed)"
    )
    sealed_value = models.TextField()
    sealed_refresh = models.TextField(blank=True)
    scope = models.TextField()
    audience = models.CharField(max_length=255)
    expires_at = models.DateTimeField()
    lifetime_seconds = models.PositiveIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "token_id"], name="one_row_per_token_of_a_job")]

    def __str__(self) -> str:
        return f"token {self.token_id} of job {self.job_id}"


class LinkLimit(models.Model):
    """Concurrency of one link, from one storage element to another ('*' matches any), as FTS3's link config:
    fixed at ``max_active``, or moved by the optimizer within [``min_active``, ``max_active``]."""

    # FTS3's /config/links names each link by a symbolic name; a row made without one gets its pair's.
    symbolicname = models.CharField(max_length=255, unique=True, blank=True)
    source_se = models.CharField(max_length=255, default="*")
    dest_se = models.CharField(max_length=255, default="*")
    min_active = models.PositiveIntegerField(
        default=1, validators=[MinValueValidator(1), MaxValueValidator(10000)]
    )
    max_active = models.PositiveIntegerField(validators=[MinValueValidator(1), MaxValueValidator(10000)])
    optimizer_mode = models.PositiveSmallIntegerField(
        choices=OptimizerMode.choices, default=OptimizerMode.FIXED
    )
    nostreams = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        validators=[MaxValueValidator(64)],
        help_text="TCP streams per copy on this link when a job sets no nostreams; empty: gfal2's default",
    )

    class Meta:
        ordering = ["source_se", "dest_se"]
        constraints = [models.UniqueConstraint(fields=["source_se", "dest_se"], name="unique_link_limit")]
        # FTS3 keeps its /config endpoints to a "config" role; a service account (the push scheduler) may be
        # granted this without being an admin (srcnet.roles).
        permissions = [
            ("configure_transfers", "Can set link, storage and activity limits through FTS3's /config API")
        ]

    def __str__(self) -> str:
        return f"{self.source_se} -> {self.dest_se}: {self.min_active}..{self.max_active}"

    def save(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if not self.symbolicname:
            self.symbolicname = default_symbolicname(self.source_se, self.dest_se)
        super().save(*args, **kwargs)

    def clean(self) -> None:
        super().clean()
        if self.min_active and self.max_active and self.min_active > self.max_active:
            raise ValidationError({"min_active": "min_active cannot exceed max_active."})


class StorageElementLimit(models.Model):
    """The most files copied at once into and out of one storage element ('*' is the default row)."""

    storage_element = models.CharField(max_length=255, unique=True)
    # Empty: the '*' row's value, else the service default (as FTS3 merges a storage's row with '*').
    inbound_max_active = models.PositiveIntegerField(null=True, blank=True, validators=[MinValueValidator(1)])
    outbound_max_active = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1)]
    )

    class Meta:
        ordering = ["storage_element"]

    def __str__(self) -> str:
        return f"{self.storage_element}: in {self.inbound_max_active}, out {self.outbound_max_active}"


class ActivityShare(models.Model):
    """The weight of an activity when the free slots of a link are shared ('default' catches the rest)."""

    activity = models.CharField(max_length=64, unique=True)
    weight = models.FloatField(validators=[MinValueValidator(0.0)])

    class Meta:
        ordering = ["activity"]

    def __str__(self) -> str:
        return f"{self.activity}: {self.weight:g}"


class OptimizerDecision(models.Model):
    """One decision of the link optimizer, with what it saw and why (FTS3's optimizer evolution)."""

    source_se = models.CharField(max_length=255)
    dest_se = models.CharField(max_length=255)
    active = models.PositiveIntegerField()
    ema_bps = models.FloatField(default=0.0)
    throughput_bps = models.FloatField(default=0.0)
    success_rate = models.FloatField(null=True, blank=True)
    queued = models.PositiveIntegerField(default=0)
    rationale = models.CharField(max_length=255)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created", "-id"]
        indexes = [models.Index(fields=["source_se", "dest_se", "-created"])]

    def __str__(self) -> str:
        return f"{self.source_se} -> {self.dest_se}: {self.active} ({self.rationale})"


class ClientIdentity(models.Model):
    """An X.509 subject DN that authenticates as a user on the FTS3 endpoint (as a Rucio conveyor does)."""

    dn = models.CharField(max_length=512, unique=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="client_identities"
    )

    class Meta:
        ordering = ["dn"]
        verbose_name_plural = "client identities"

    def __str__(self) -> str:
        return self.dn


class TokenIdentity(models.Model):
    """A token issuer's subject (``iss`` and ``sub`` of its JWTs) that authenticates as a user on the FTS3
    endpoint: Rucio's conveyor presenting its issuer's token (scope ``fts``), as it does with SKA-IAM."""

    issuer = models.CharField(max_length=512, help_text="The tokens' iss, without a trailing slash")
    subject = models.CharField(max_length=255, help_text="The tokens' sub")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="token_identities"
    )
    # Made by single sign-on (identity/sso.py): the account's role and projects follow the issuer's groups.
    # An identity an admin registered (a service's, fts3_identity) keeps the account as the admin set it.
    sign_on = models.BooleanField(default=False)

    class Meta:
        ordering = ["issuer", "subject"]
        verbose_name_plural = "token identities"
        constraints = [models.UniqueConstraint(fields=["issuer", "subject"], name="token_identity_unique")]

    def __str__(self) -> str:
        return f"{self.subject} of {self.issuer}"


class LinkPause(models.Model):
    """An operator's pause of a link: nothing new starts on it until it is resumed (running copies finish)."""

    source_se = models.CharField(max_length=255)
    dest_se = models.CharField(max_length=255)
    reason = models.CharField(max_length=255, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["source_se", "dest_se"]
        constraints = [models.UniqueConstraint(fields=["source_se", "dest_se"], name="unique_link_pause")]

    def __str__(self) -> str:
        return f"{self.source_se} -> {self.dest_se} paused"
