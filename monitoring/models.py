"""What the network carried for each copy, lane and rule, from the sites' fireflies (docs/network.md,
"Network accounting"), and where the control plane is in the firefly collector's journal."""

from __future__ import annotations

from django.db import models


class FlowTraffic(models.Model):
    """The flows the fireflies reported for one copy (``file``), or, for flows that matched no copy, for
    the storage endpoint that reported them. A flow that several copies could have carried (their times
    overlap on the same endpoint, e.g. a connection reused by consecutive copies) is shared among them by
    their sizes and counted in ``shared_flows``: its bytes are then an estimate."""

    key = models.CharField(max_length=64, unique=True, help_text="file:<id> or endpoint:<name>")
    file = models.OneToOneField(
        "transfers.TransferFile", on_delete=models.CASCADE, null=True, blank=True, related_name="traffic"
    )
    endpoint = models.ForeignKey(
        "topology.StorageEndpoint", on_delete=models.CASCADE, null=True, blank=True, related_name="traffic"
    )
    rule = models.ForeignKey(
        "rules.Rule", on_delete=models.SET_NULL, null=True, blank=True, related_name="traffic"
    )
    policy = models.ForeignKey(
        "replicas.ReplicaPolicy", on_delete=models.SET_NULL, null=True, blank=True, related_name="traffic"
    )
    source_site = models.CharField(max_length=64, blank=True)
    destination_site = models.CharField(max_length=64, blank=True)
    activity = models.CharField(max_length=64, blank=True, help_text="The copy's activity (its job's)")
    experiment = models.PositiveIntegerField(null=True, blank=True, help_text="As the fireflies gave it")
    flows = models.PositiveIntegerField(default=0)
    shared_flows = models.PositiveIntegerField(default=0)
    bytes = models.BigIntegerField(default=0, help_text="Bytes the flows carried (sent plus received)")
    first_seen = models.DateTimeField()
    last_seen = models.DateTimeField()

    class Meta:
        ordering = ["-last_seen"]
        indexes = [models.Index(fields=["source_site", "destination_site", "activity"])]

    def __str__(self) -> str:
        return f"{self.key}: {self.flows} flows, {self.bytes} bytes"


class FireflyCursor(models.Model):
    """How far the control plane has read a collector's journal (``GET /flows?after=``)."""

    url = models.CharField(max_length=255, unique=True)
    epoch = models.CharField(max_length=32, blank=True)
    after = models.BigIntegerField(default=0)
    missed = models.BigIntegerField(default=0, help_text="Flows that left the ring before they were read")
    unmatched = models.BigIntegerField(default=0, help_text="Flows no registered storage endpoint reported")
    updated = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.url} after {self.after} ({self.epoch})"
