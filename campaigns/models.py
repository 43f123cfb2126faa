"""Data-challenge campaigns: synthetic products pushed at a target rate, scored as they go."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models

from . import workload

MAX_SIMULATED_SECONDS = 7 * 86400
# A real campaign runs on this one machine's XRootD sites: keep it to hours, not days.
MAX_REAL_SECONDS = 86400
MIN_SIMULATED_PRODUCT_BYTES = 10**9
# After its duration a campaign waits this long, or its duration if longer, for the products still moving.
MIN_DRAIN_SECONDS = 120.0
# A recurring campaign fires through Celery beat, which looks at its database schedule every 5 s.
MIN_EVERY_SECONDS = 5
MAX_EVERY_SECONDS = 366 * 86400
CRON_FIELDS = ("minute", "hour", "day_of_month", "month_of_year", "day_of_week")
# What a campaign is asked to do: the mode, where from and to, the rate curve, the files, the simulator's
# settings. A recurring campaign's runs copy these from their template (services.RUN_FIELDS).
PARAMETER_FIELDS = (
    "mode",
    "sources",
    "destinations",
    "target_rate_bps",
    "ramp_seconds",
    "duration_seconds",
    "min_file_bytes",
    "max_file_bytes",
    "files_per_product",
    "scenario",
    "topology",
)
# What whoever creates a campaign sets, in this order (the portal's form, the API's writable fields):
# its name, its parameters, when it starts, the clean-up and a recurring schedule.
INPUT_FIELDS = ("name", *PARAMETER_FIELDS, "start_at", "cleanup", "every_seconds", "cron")


def cron_fields(expression: str) -> dict[str, str]:
    """``"0 * * * *"`` as django-celery-beat's CrontabSchedule fields; ValueError if it is not valid cron."""
    from celery.schedules import ParseException, crontab

    parts = expression.split()
    if len(parts) != len(CRON_FIELDS):
        raise ValueError(f"{len(parts)} fields instead of 5")
    fields = dict(zip(CRON_FIELDS, parts, strict=True))
    try:
        crontab(**fields)  # celery parses every field here: the same parser beat uses
    except (ValueError, ParseException) as exc:
        raise ValueError(str(exc) or type(exc).__name__) from exc
    return fields


class Campaign(models.Model):
    class Mode(models.TextChoices):
        REAL = "real", "Real (local network)"
        SIMULATED = "simulated", "Simulated (full scale)"

    class State(models.TextChoices):
        SCHEDULED = "scheduled", "Scheduled"
        RUNNING = "running", "Running"
        STOPPED = "stopped", "Stopped"
        FINISHED = "finished", "Finished"
        FAILED = "failed", "Failed"
        # A recurring campaign is a template: each firing of its schedule creates a new run (a campaign).
        RECURRING = "recurring", "Recurring (template)"

    name = models.CharField(max_length=120)
    sources = models.JSONField(default=list, help_text="Telescope or SDP endpoint names")
    destinations = models.JSONField(default=list, help_text="SRC storage endpoint names")
    target_rate_bps = models.FloatField(help_text="Target rate in bit/s")
    ramp_seconds = models.FloatField(default=0, help_text="Seconds to reach the target rate (linear)")
    duration_seconds = models.FloatField()
    min_file_bytes = models.BigIntegerField()
    max_file_bytes = models.BigIntegerField()
    files_per_product = models.PositiveIntegerField(default=1)
    mode = models.CharField(max_length=16, choices=Mode.choices, default=Mode.REAL)
    topology = models.CharField(
        max_length=16, default="db", help_text="Simulated mode: the stored topology (db) or reference"
    )
    scenario = models.CharField(
        max_length=40, default="one_replica", help_text="Simulated mode: the scenario"
    )
    start_at = models.DateTimeField(null=True, blank=True, help_text="Empty: start now")
    cleanup = models.BooleanField(default=False, help_text="Delete the synthetic files and products after")
    state = models.CharField(max_length=16, choices=State.choices, default=State.SCHEDULED)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created = models.DateTimeField(auto_now_add=True)
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)
    # Run state of a real campaign: what survives a stop/resume (active time, bytes generated so far).
    active_seconds = models.FloatField(default=0)
    last_tick = models.DateTimeField(null=True, blank=True)
    generated_bytes = models.BigIntegerField(default=0)
    products_created = models.PositiveIntegerField(default=0)
    # Resuming starts a new tick chain; ticks of an older chain see a different generation and end.
    generation = models.PositiveIntegerField(default=0)
    summary = models.JSONField(default=dict, blank=True)
    # Recurring campaigns: one of the two makes the campaign a template whose runs are new campaigns.
    every_seconds = models.PositiveIntegerField(
        null=True, blank=True, help_text="Recurring: start a new run every this many seconds"
    )
    cron = models.CharField(
        max_length=120,
        blank=True,
        help_text='Recurring: start a new run at these times (UTC), "minute hour day month weekday"',
    )
    template = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="runs", editable=False
    )
    periodic_task = models.OneToOneField(
        "django_celery_beat.PeriodicTask",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        editable=False,
    )

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"{self.name} ({self.mode}, {self.state})"

    @property
    def is_recurring(self) -> bool:
        return bool(self.every_seconds is not None or self.cron)

    def schedule_text(self) -> str:
        if self.every_seconds is not None:
            return f"every {self.every_seconds} s"
        return f"cron {self.cron}" if self.cron else ""

    def clean(self) -> None:
        errors: dict[str, str] = {}
        if not self.target_rate_bps or self.target_rate_bps <= 0:
            errors["target_rate_bps"] = "The target rate must be positive."
        if self.ramp_seconds is None or self.ramp_seconds < 0:
            errors["ramp_seconds"] = "The ramp cannot be negative."
        limit = MAX_SIMULATED_SECONDS if self.mode == self.Mode.SIMULATED else MAX_REAL_SECONDS
        if not self.duration_seconds or self.duration_seconds <= 0:
            errors["duration_seconds"] = "The duration must be positive."
        elif self.duration_seconds > limit:
            errors["duration_seconds"] = f"A {self.mode} campaign lasts at most {limit:g} s."
        elif self.ramp_seconds and self.ramp_seconds > self.duration_seconds:
            errors["ramp_seconds"] = "The ramp cannot be longer than the campaign."
        if self.min_file_bytes is None or self.min_file_bytes <= 0:
            errors["min_file_bytes"] = "File sizes must be positive."
        elif self.max_file_bytes is None or self.max_file_bytes < self.min_file_bytes:
            errors["max_file_bytes"] = "The largest file size must be at least the smallest."
        if not self.files_per_product or self.files_per_product < 1:
            errors["files_per_product"] = "A product has at least one file."
        elif self.mode == self.Mode.SIMULATED and self.mean_product_bytes() < MIN_SIMULATED_PRODUCT_BYTES:
            # The simulator models SKA-sized products: small ones would be millions of them.
            errors["min_file_bytes"] = "A simulated campaign's products average at least 1 GB."
        if self.mode not in self.Mode.values:
            errors["mode"] = f"One of {', '.join(self.Mode.values)}."
        if self.topology not in ("db", "reference"):
            errors["topology"] = "db or reference."
        elif self.mode == self.Mode.REAL and self.topology != "db":
            errors["topology"] = "A real campaign runs on the stored topology (db)."
        lists_ok = True
        if not isinstance(self.sources, list) or not self.sources:
            errors["sources"] = "At least one source (a telescope or its SDP endpoint)."
            lists_ok = False
        if not isinstance(self.destinations, list) or not self.destinations:
            errors["destinations"] = "At least one destination (an SRC storage endpoint)."
            lists_ok = False
        if lists_ok and self.mode == self.Mode.SIMULATED and "topology" not in errors:
            # Checked against the topology the simulator runs on, with what it cannot honour.
            from .feasibility import input_errors

            figures = {"target_rate_bps", "ramp_seconds", "duration_seconds", "min_file_bytes"}
            figures |= {"max_file_bytes", "files_per_product"}
            simulated = input_errors(self, figures_ok=not figures & set(errors))
            errors.update({k: v for k, v in simulated.items() if k not in errors})
        elif lists_ok:
            errors.update(self._endpoint_errors())
        errors.update(self._schedule_errors())
        if errors:
            raise ValidationError(errors)

    def _endpoint_errors(self) -> dict[str, str]:
        """A real campaign's sources and destinations, against the stored topology."""
        from topology.choices import StorageRole
        from topology.models import StorageEndpoint, Telescope

        errors: dict[str, str] = {}
        for name in self.sources:
            if not (
                Telescope.objects.filter(name=name).exists()
                or StorageEndpoint.objects.filter(name=name, role=StorageRole.SDP).exists()
            ):
                errors["sources"] = f"{name!r} is neither a telescope nor an SDP endpoint."
                break
        for name in self.destinations:
            if not StorageEndpoint.objects.filter(name=name).exclude(role=StorageRole.SDP).exists():
                errors["destinations"] = f"{name!r} is not an SRC storage endpoint."
                break
        return errors

    def _schedule_errors(self) -> dict[str, str]:
        errors: dict[str, str] = {}
        if self.every_seconds is not None and self.cron:
            errors["cron"] = "Either every_seconds or cron, not both."
        elif self.every_seconds is not None and not (
            MIN_EVERY_SECONDS <= self.every_seconds <= MAX_EVERY_SECONDS
        ):
            errors["every_seconds"] = f"Between {MIN_EVERY_SECONDS} s and {MAX_EVERY_SECONDS} s."
        elif self.cron:
            try:
                cron_fields(self.cron)
            except ValueError as exc:
                errors["cron"] = (
                    f"Not a cron expression ({exc}): five fields, minute hour day-of-month month "
                    "day-of-week, e.g. '0 * * * *'."
                )
        if self.template_id is not None and self.is_recurring:
            errors["every_seconds"] = "A run of a recurring campaign does not recur itself."
        return errors

    def mean_product_bytes(self) -> float:
        return (self.files_per_product or 1) * ((self.min_file_bytes or 0) + (self.max_file_bytes or 0)) / 2

    def planned_bytes_at(self, elapsed: float) -> float:
        """Bytes the target asks for after ``elapsed`` active seconds: a linear ramp, then the flat rate."""
        return workload.planned_bytes_at(
            self.target_rate_bps, self.ramp_seconds, self.duration_seconds, elapsed
        )

    def target_rate_at(self, elapsed: float) -> float:
        return workload.target_rate_at(self.target_rate_bps, self.ramp_seconds, elapsed)

    def drain_seconds(self) -> float:
        """How long the campaign waits, after its duration, for the products still moving."""
        return max(MIN_DRAIN_SECONDS, self.duration_seconds)


class CampaignProduct(models.Model):
    """Tags a product as synthetic data of a campaign, with the one destination it was pushed to."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="products")
    product = models.OneToOneField(
        "replicas.DataProduct", on_delete=models.CASCADE, related_name="campaign_link"
    )
    destination = models.CharField(max_length=120)
    index = models.PositiveIntegerField()
    size_bytes = models.BigIntegerField()

    class Meta:
        ordering = ["campaign", "index"]
        constraints = [models.UniqueConstraint(fields=["campaign", "index"], name="unique_campaign_index")]

    def __str__(self) -> str:
        return f"campaign {self.campaign_id} product {self.index} -> {self.destination}"


class CampaignSample(models.Model):
    """The score at one tick: planned vs achieved, overall and per destination."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="samples")
    at = models.DateTimeField(auto_now_add=True)
    elapsed_seconds = models.FloatField(help_text="Active seconds since the start (stops excluded)")
    wall_seconds = models.FloatField(help_text="Wall-clock seconds since the start")
    target_rate_bps = models.FloatField()
    planned_bytes = models.BigIntegerField()
    achieved_bytes = models.BigIntegerField()
    achieved_rate_bps = models.FloatField(help_text="Achieved rate since the previous sample")
    products = models.PositiveIntegerField()
    complete = models.PositiveIntegerField()
    failed = models.PositiveIntegerField()
    per_destination = models.JSONField(default=dict)

    class Meta:
        ordering = ["campaign", "elapsed_seconds", "id"]

    def __str__(self) -> str:
        return f"campaign {self.campaign_id} at {self.elapsed_seconds:.0f} s"
