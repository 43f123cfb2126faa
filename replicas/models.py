"""Data products, their files and replicas, and replica policies."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator, RegexValidator
from django.db import models

from .choices import PolicyKind, ProductState, ReplicaState

scope_validator = RegexValidator(
    r"^[A-Za-z0-9][A-Za-z0-9._-]{0,24}$", "A Rucio scope: up to 25 letters, digits, '.-_'."
)
did_name_validator = RegexValidator(r"^[A-Za-z0-9][A-Za-z0-9._-]*$", "Letters, digits, '.', '-' or '_'.")
adler32_validator = RegexValidator(r"^[0-9a-f]{8}$", "An adler32 checksum is 8 lower-case hex digits.")


class DataProduct(models.Model):
    """An observatory data product: one or more files produced together at a telescope (a Rucio dataset)."""

    scope = models.CharField(max_length=25, validators=[scope_validator])
    name = models.CharField(max_length=200, validators=[did_name_validator])
    telescope = models.ForeignKey("topology.Telescope", on_delete=models.PROTECT, related_name="products")
    source = models.ForeignKey(
        "topology.StorageEndpoint",
        on_delete=models.PROTECT,
        related_name="products",
        help_text="The SDP storage the product was written to",
    )
    state = models.CharField(max_length=16, choices=ProductState.choices, default=ProductState.REGISTERED)
    priority = models.PositiveSmallIntegerField(default=3, help_text="1 (lowest) to 5 (highest), as in FTS3")
    created = models.DateTimeField(auto_now_add=True)
    deadline = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "scope", "name"]
        constraints = [models.UniqueConstraint(fields=["scope", "name"], name="unique_product_did")]

    def __str__(self) -> str:
        return f"{self.scope}:{self.name}"

    @property
    def did(self) -> str:
        return f"{self.scope}:{self.name}"

    @property
    def size_bytes(self) -> int:
        return sum(f.size_bytes for f in self.files.all())

    def clean(self) -> None:
        super().clean()
        if not 1 <= (self.priority or 0) <= 5:
            raise ValidationError({"priority": "Priority runs from 1 to 5."})
        if self.source_id and self.telescope_id and self.source.site_id != self.telescope_id:
            raise ValidationError({"source": "The source storage must be the telescope's own SDP storage."})


class ProductFile(models.Model):
    """One file of a product, with the size and adler32 the SDP recorded when it wrote it."""

    product = models.ForeignKey(DataProduct, on_delete=models.CASCADE, related_name="files")
    name = models.CharField(max_length=200, validators=[did_name_validator])
    size_bytes = models.BigIntegerField(validators=[MinValueValidator(0)])
    adler32 = models.CharField(max_length=8, validators=[adler32_validator])

    class Meta:
        ordering = ["product", "name"]
        constraints = [models.UniqueConstraint(fields=["product", "name"], name="unique_file_in_product")]

    def __str__(self) -> str:
        return self.name

    @property
    def relative_path(self) -> str:
        """Where the file lives under every storage endpoint's prefix (the same everywhere: deterministic)."""
        return f"{self.product.scope}/{self.product.name}/{self.name}"


class ReplicaPolicy(models.Model):
    """How a telescope's products are placed at SRCs."""

    name = models.CharField(max_length=64, unique=True)
    telescope = models.ForeignKey("topology.Telescope", on_delete=models.PROTECT, related_name="policies")
    kind = models.CharField(max_length=32, choices=PolicyKind.choices, default=PolicyKind.WEIGHTED_SHARE)
    is_active = models.BooleanField(default=True)
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "replica policies"
        constraints = [
            models.UniqueConstraint(
                fields=["telescope"],
                condition=models.Q(is_active=True),
                name="one_active_policy_per_telescope",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def weights(self) -> dict[str, float]:
        """Destination storage endpoint name -> weight: explicit shares, else the SRCs' own share weights."""
        explicit = {s.destination.name: s.weight for s in self.shares.select_related("destination")}
        if explicit:
            return explicit
        from topology.choices import StorageRole
        from topology.models import StorageEndpoint

        endpoints = StorageEndpoint.objects.filter(role=StorageRole.DISK, is_active=True).select_related(
            "site__regionalcentre"
        )
        return {
            e.name: e.site.regionalcentre.share_weight
            for e in endpoints
            if hasattr(e.site, "regionalcentre") and e.site.regionalcentre.share_weight > 0
        }


class PolicyShare(models.Model):
    """An explicit weight of one destination in a weighted-share policy."""

    policy = models.ForeignKey(ReplicaPolicy, on_delete=models.CASCADE, related_name="shares")
    destination = models.ForeignKey(
        "topology.StorageEndpoint", on_delete=models.PROTECT, related_name="shares"
    )
    weight = models.FloatField(validators=[MinValueValidator(0.0)])

    class Meta:
        ordering = ["policy", "destination"]
        constraints = [models.UniqueConstraint(fields=["policy", "destination"], name="unique_share")]

    def __str__(self) -> str:
        return f"{self.destination_id}: {self.weight:g}"

    def clean(self) -> None:
        super().clean()
        from topology.choices import StorageRole

        if self.destination_id and self.destination.role == StorageRole.SDP:
            raise ValidationError({"destination": "A replica goes to SRC storage, not to SDP storage."})


class Replica(models.Model):
    """Where a copy of a product is (or is going), and which policy put it there."""

    product = models.ForeignKey(DataProduct, on_delete=models.CASCADE, related_name="replicas")
    endpoint = models.ForeignKey(
        "topology.StorageEndpoint", on_delete=models.PROTECT, related_name="replicas"
    )
    state = models.CharField(max_length=16, choices=ReplicaState.choices, default=ReplicaState.PLANNED)
    policy = models.ForeignKey(
        ReplicaPolicy, on_delete=models.SET_NULL, null=True, blank=True, related_name="replicas"
    )
    reason = models.TextField(blank=True, help_text="Why it is here, or why it failed")
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["product", "endpoint"]
        constraints = [models.UniqueConstraint(fields=["product", "endpoint"], name="unique_replica")]

    def __str__(self) -> str:
        return f"{self.product} @ {self.endpoint}"
