"""What the push loop remembers: each cycle's decisions, and the throughput every path delivered."""

from __future__ import annotations

from django.db import models


class PushCycle(models.Model):
    """One pass of the push loop: what it planned, what it submitted, and the planner's events."""

    created = models.DateTimeField(auto_now_add=True)
    products_queued = models.PositiveIntegerField(default=0)
    legs_planned = models.PositiveIntegerField(default=0)
    legs_submitted = models.PositiveIntegerField(default=0)
    submitted = models.JSONField(default=list, blank=True, help_text="One entry per job: product, lane, why")
    events = models.JSONField(default=list, blank=True, help_text="Backpressure and other planner events")
    error = models.TextField(blank=True)
    duration_seconds = models.FloatField(null=True, blank=True, help_text="How long the cycle took")

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return f"push cycle {self.pk}: {self.legs_submitted}/{self.legs_planned} legs"


class PathMeasurement(models.Model):
    """What one push transfer achieved on a lane (source site to destination site): the history the
    planner's streams/concurrency model is corrected by."""

    source = models.CharField(max_length=64)
    destination = models.CharField(max_length=64)
    streams = models.PositiveSmallIntegerField()
    files = models.PositiveSmallIntegerField(default=1)
    bytes = models.BigIntegerField()
    seconds = models.FloatField()
    throughput_bps = models.FloatField()
    rtt_ms = models.FloatField(null=True, blank=True)
    # Seconds its copies took beyond their bytes at their share of the lane's planned rate (mean over
    # the job's files): the copy dead time the planner sizes a lane's copies in flight with.
    copy_dead_s = models.FloatField(null=True, blank=True)
    # The rate the plan gave the job (its copies' share of the lane's planned rate): a job that kept up
    # with it says only that its streams could carry that much (planning.tuning.correction).
    planned_bps = models.FloatField(null=True, blank=True)
    succeeded = models.BooleanField(default=True)
    job_id = models.CharField(max_length=64, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created", "-id"]
        indexes = [models.Index(fields=["source", "destination", "-created"])]

    def __str__(self) -> str:
        return f"{self.source} -> {self.destination}: {self.throughput_bps / 1e6:.1f} Mbit/s x{self.streams}"


class Simulation(models.Model):
    """A simulator run asked for through the API; its report (Markdown, JSON, PNGs) is kept on disk."""

    class State(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    scenario = models.CharField(max_length=64, default="all")
    days = models.FloatField(default=1.0)
    topology = models.CharField(max_length=16, default="db")
    failures = models.BooleanField(default=False)
    with_lp = models.BooleanField(default=True)
    state = models.CharField(max_length=16, choices=State.choices, default=State.QUEUED)
    summary = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True)
    requested_by = models.ForeignKey("auth.User", on_delete=models.SET_NULL, null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    finished = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return f"simulation {self.pk} ({self.scenario}, {self.days:g} d): {self.state}"


class ExternalJob(models.Model):
    """A job submitted to an FTS3 endpoint the platform does not run (``SRCNET_TRANSFERTOOL=fts3``): such
    an endpoint sends no ``job_finished`` signal, so ``schedulers.poll_external_jobs`` asks it for the
    state of every job not yet settled and settles the job's replica the way the signal does."""

    endpoint = models.CharField(max_length=500)
    job_id = models.CharField(max_length=64)
    metadata = models.JSONField(default=dict, blank=True, help_text="replica_id and what was submitted")
    state = models.CharField(max_length=32, default="SUBMITTED", help_text="Last state the endpoint gave")
    submitted = models.DateTimeField(auto_now_add=True)
    polled = models.DateTimeField(null=True, blank=True)
    misses = models.PositiveIntegerField(default=0, help_text="Polls in a row that did not find the job")
    settled = models.DateTimeField(null=True, blank=True, help_text="When its replica was settled")

    class Meta:
        ordering = ["submitted", "id"]
        constraints = [models.UniqueConstraint(fields=["endpoint", "job_id"], name="external_job_unique")]
        indexes = [models.Index(fields=["settled"])]

    def __str__(self) -> str:
        return f"{self.job_id} at {self.endpoint}: {self.state}"


class PlannedRule(models.Model):
    """What the plan gave a leg the push loop placed as a Rucio rule (``SRCNET_PUSH_THROUGH=rucio``): the
    same figures a push job carries in its metadata in transfertool mode (lane, planned rate, streams,
    predicted arrival). Rucio's conveyor submits the rule's FTS3 jobs with its own metadata (scope, file
    name, destination RSE), so the planned-rate and arrival metrics find the plan here by the product and
    the RSE (``monitoring/rule_plans.py``)."""

    rule_id = models.CharField(max_length=64, unique=True)
    product = models.ForeignKey("replicas.DataProduct", on_delete=models.CASCADE, related_name="+")
    rse = models.CharField(max_length=255, help_text="The rule's destination RSE (its storage endpoint)")
    source_site = models.CharField(max_length=64)
    destination_site = models.CharField(max_length=64)
    planned_bps = models.FloatField(help_text="The plan's rate for the leg, bit/s")
    streams = models.PositiveIntegerField(default=0, help_text="TCP streams the plan gave the leg")
    predicted_arrival = models.FloatField(
        null=True, blank=True, help_text="Unix time the plan expects the copy to arrive"
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created", "id"]
        indexes = [models.Index(fields=["rse", "product"])]

    def __str__(self) -> str:
        return f"rule {self.rule_id}: {self.source_site} -> {self.destination_site}"
