"""Data products, their files and replicas, and replica policies."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

from transfers.choices import JobState

from .choices import (
    DEFAULT_DEGRADE_ORDER,
    DegradeStep,
    PolicyKind,
    ProductState,
    ProductType,
    ReplicaState,
)

scope_validator = RegexValidator(
    r"^[A-Za-z0-9][A-Za-z0-9._-]{0,24}$", "A Rucio scope: up to 25 letters, digits, '.-_'."
)
did_name_validator = RegexValidator(r"^[A-Za-z0-9][A-Za-z0-9._-]*$", "Letters, digits, '.', '-' or '_'.")
observation_validator = RegexValidator(
    r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$",
    "An observation id: up to 64 letters, digits, '.', ':', '-' or '_'.",
)
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
    reroutes = models.PositiveSmallIntegerField(
        default=0, help_text="Times a first copy failed on its way and sent it back to the SDP queue"
    )
    created = models.DateTimeField(auto_now_add=True)
    deadline = models.DateTimeField(null=True, blank=True)
    project = models.ForeignKey(
        "projects.Project",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="products",
        help_text="The observing project it belongs to; none: observatory data, visible to every account",
    )
    proprietary_until = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Until then only the project's members (and operators) see it (replicas/visibility.py)",
    )
    predicted_arrival = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When its first copy reaches its SRC, by the push loop's plan (schedulers/arrivals.py)",
    )
    arrival_note = models.CharField(max_length=300, blank=True, help_text="Why it arrives then, not sooner")
    submitted_prediction = models.DateTimeField(
        null=True,
        blank=True,
        help_text="The arrival predicted as its first copy was submitted, kept to measure the prediction",
    )
    observation_id = models.CharField(
        max_length=64,
        blank=True,
        validators=[observation_validator],
        help_text="The observation (scheduling block) it was made from, as the SDP names it",
    )
    product_type = models.CharField(max_length=24, choices=ProductType.choices, blank=True)

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


def default_degrade_order() -> list[str]:
    return list(DEFAULT_DEGRADE_ORDER)


# A policy's own input fields, in the order the portal's form and the API show them.
POLICY_INPUT_FIELDS = (
    "name",
    "telescope",
    "kind",
    "is_active",
    "description",
    "partners",
    "copy_site",
    "relay_centre",
    "relay_all",
    "degrade_order",
    "degrade_at",
    "recover_at",
)


class ReplicaPolicy(models.Model):
    """How a telescope's products are placed at SRCs: one of the four AENEAS scenarios and its parameters.

    Every kind picks the product's first SRC by weighted share. ``two_replicas`` then copies it from that
    SRC to its partner (``partners``, SRC name -> partner SRC name; an SRC not named there takes the next
    SRC by name), ``full_copy`` from that SRC to ``copy_site`` (unless it is the copy site), and
    ``distribution`` relays the first copy through ``relay_centre`` (a multihop job) when the direct path
    runs through the centre's city, or always with ``relay_all``. ``relay_centre`` is also where any kind
    relays when the SDP buffer passes ``degrade_at`` and ``degrade_order`` reaches ``relay``."""

    name = models.CharField(max_length=64, unique=True)
    telescope = models.ForeignKey("topology.Telescope", on_delete=models.PROTECT, related_name="policies")
    kind = models.CharField(max_length=32, choices=PolicyKind.choices, default=PolicyKind.WEIGHTED_SHARE)
    is_active = models.BooleanField(default=True)
    description = models.TextField(blank=True)
    partners = models.JSONField(
        default=dict,
        blank=True,
        help_text='two_replicas: SRC name -> partner SRC name, e.g. {"UKSRC": "AUSRC"}; '
        "SRCs not named take the next SRC by name",
    )
    copy_site = models.ForeignKey(
        "topology.RegionalCentre",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="copy_policies",
        help_text="full_copy: the SRC that keeps a copy of every product",
    )
    relay_centre = models.ForeignKey(
        "topology.RegionalCentre",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="relay_policies",
        help_text="The distribution centre the telescope relays through (distribution; any kind's relay "
        "step). Empty: the reference centre for the telescope, if the topology has it",
    )
    relay_all = models.BooleanField(
        default=False, help_text="distribution: relay every product, not only those whose path passes it"
    )
    degrade_order = models.JSONField(
        default=default_degrade_order,
        blank=True,
        help_text="What to give up, in order, as the SDP buffer fills: defer_second_copies, relay",
    )
    degrade_at = models.FloatField(
        default=0.8,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="Fraction of the SDP buffer at which the next degrade step starts",
    )
    recover_at = models.FloatField(
        default=0.5,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="Fraction of the SDP buffer below which the full policy returns",
    )

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

    def parameters(self) -> str:
        """The kind's parameters in a line (the portal's policy list)."""
        parts = []
        if self.kind == PolicyKind.TWO_REPLICAS:
            named = ", ".join(f"{k} -> {v}" for k, v in sorted((self.partners or {}).items()))
            parts.append(
                f"partners {named}; others: the next SRC by name" if named else "partners: ring by name"
            )
        if self.copy_site_id is not None:
            parts.append(f"copy site {self.copy_site}")
        if self.relay_centre_id is not None:
            parts.append(f"relay {self.relay_centre}{' (every product)' if self.relay_all else ''}")
        order = ", ".join(self.degrade_order or []) or "never"
        parts.append(f"degrade ({order}) at {self.degrade_at:.0%}, recover at {self.recover_at:.0%}")
        return "; ".join(parts)

    def clean(self) -> None:
        super().clean()
        errors: dict[str, str] = {}
        for check in (
            self._clean_partners,
            self._clean_copy_site,
            self._clean_relay,
            self._clean_degrade,
        ):
            for field_name, message in check():
                errors.setdefault(field_name, message)
        if errors:
            raise ValidationError(errors)

    def _has_path(self, source_id: int, destination_id: int) -> bool:
        from topology.models import NetworkPath

        return NetworkPath.objects.filter(source_id=source_id, destination_id=destination_id).exists()

    def _has_storage(self, site_id: int, role: str) -> bool:
        from topology.models import StorageEndpoint

        return StorageEndpoint.objects.filter(site_id=site_id, role=role, is_active=True).exists()

    def _clean_partners(self) -> list[tuple[str, str]]:
        from topology.choices import StorageRole
        from topology.models import RegionalCentre

        partners = self.partners
        if partners in (None, {}):
            return []
        if not isinstance(partners, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in partners.items()
        ):
            return [("partners", 'A mapping of SRC name to partner SRC name, e.g. {"UKSRC": "AUSRC"}.')]
        if self.kind != PolicyKind.TWO_REPLICAS:
            return [("partners", "Only the two-replicas policy has partners.")]
        centres = {
            rc.name: rc for rc in RegionalCentre.objects.filter(name__in=[*partners, *partners.values()])
        }
        for source, partner in sorted(partners.items()):
            for name in (source, partner):
                rc = centres.get(name)
                if rc is None or rc.is_distribution_centre:
                    return [("partners", f"{name} is not an SKA Regional Centre.")]
            if source == partner:
                return [("partners", f"{source} cannot be its own partner.")]
            if not self._has_storage(centres[partner].pk, StorageRole.DISK):
                return [("partners", f"{partner} has no active SRC disk storage.")]
            if not self._has_path(centres[source].pk, centres[partner].pk):
                return [("partners", f"No network path from {source} to its partner {partner}.")]
        return []

    def _clean_copy_site(self) -> list[tuple[str, str]]:
        from topology.choices import StorageRole
        from topology.models import RegionalCentre

        if self.copy_site_id is None:
            if self.kind == PolicyKind.FULL_COPY:
                return [("copy_site", "The full-copy policy needs a copy site.")]
            return []
        if self.kind != PolicyKind.FULL_COPY:
            return [("copy_site", "Only the full-copy policy has a copy site.")]
        site = RegionalCentre.objects.get(pk=self.copy_site_id)
        if site.is_distribution_centre:
            return [("copy_site", f"{site.name} is a distribution centre: a full copy is kept at an SRC.")]
        if not self._has_storage(site.pk, StorageRole.DISK):
            return [("copy_site", f"{site.name} has no active SRC disk storage.")]
        if self.telescope_id is not None and not self._has_path(self.telescope_id, site.pk):
            return [("copy_site", f"No network path from {self.telescope.name} to {site.name}.")]
        # The copy is made from whichever SRC received the product: each must reach the copy site.
        for src in RegionalCentre.objects.filter(is_distribution_centre=False, share_weight__gt=0).exclude(
            pk=site.pk
        ):
            if not self._has_path(src.pk, site.pk):
                return [("copy_site", f"No network path from {src.name} to {site.name}.")]
        return []

    def _clean_relay(self) -> list[tuple[str, str]]:
        from topology.choices import StorageRole
        from topology.models import RegionalCentre

        out = []
        if self.relay_all and self.kind != PolicyKind.DISTRIBUTION:
            out.append(("relay_all", "Only the distribution policy relays every product."))
        if self.relay_centre_id is None:
            if self.kind == PolicyKind.DISTRIBUTION:
                out.append(("relay_centre", "The distribution policy needs a relay centre."))
            return out
        centre = RegionalCentre.objects.get(pk=self.relay_centre_id)
        if not centre.is_distribution_centre:
            out.append(
                ("relay_centre", f"{centre.name} is an SRC: a relay goes through a distribution centre.")
            )
        elif not self._has_storage(centre.pk, StorageRole.BUFFER):
            out.append(("relay_centre", f"{centre.name} has no active buffer storage."))
        elif self.telescope_id is not None and not self._has_path(self.telescope_id, centre.pk):
            out.append(("relay_centre", f"No network path from {self.telescope.name} to {centre.name}."))
        return out

    def _clean_degrade(self) -> list[tuple[str, str]]:
        out = []
        order = self.degrade_order
        steps = set(DegradeStep.values)
        if not isinstance(order, list) or not all(isinstance(s, str) and s in steps for s in order):
            out.append(("degrade_order", f"A list of steps out of {', '.join(DegradeStep.values)}."))
        elif len(set(order)) != len(order):
            out.append(("degrade_order", "A step appears twice."))
        if self.degrade_at is not None and not 0 < self.degrade_at <= 1:
            out.append(("degrade_at", "Degrade at a fraction of the SDP buffer above 0 and at most 1."))
        elif (
            self.degrade_at is not None
            and self.recover_at is not None
            and not 0 < self.recover_at < self.degrade_at
        ):
            out.append(("recover_at", "Recover at a fraction above 0 and below degrade_at."))
        return out

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
    upstream = models.ForeignKey(
        "self",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="downstream",
        help_text="The replica it is copied from once that one is available (a second or full copy); "
        "empty: copied from the SDP",
    )
    via = models.ForeignKey(
        "topology.RegionalCentre",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="relayed_replicas",
        help_text="The distribution centre a relayed (multihop) copy goes through",
    )
    rucio_rule = models.CharField(
        max_length=64,
        blank=True,
        db_index=True,
        help_text="Rucio mode: the rule whose locks it follows (the push loop's, a scientist's); empty: none",
    )
    placement = models.TextField(
        blank=True,
        help_text="Rucio mode: why the push loop placed it there, kept in front of the reason as its rule's "
        "locks move",
    )
    rerouted = models.BooleanField(
        default=False,
        help_text="Kept as the history of a re-route (its product went back to the SDP queue, or its pin was "
        "given up): not one of the product's current replicas",
    )
    repairs = models.PositiveSmallIntegerField(
        default=0,
        help_text="How many times a copy was planned to heal it (found lost or corrupt at its storage)",
    )
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["product", "endpoint"]
        constraints = [models.UniqueConstraint(fields=["product", "endpoint"], name="unique_replica")]

    def __str__(self) -> str:
        return f"{self.product} @ {self.endpoint}"


class CopyRequest(models.Model):
    """The push loop's request for the copy that makes a replica (Rucio's ``requests`` row): the transfer job
    that carries it, at which FTS3 endpoint, the plan it was given, and how it ended.

    The link from a replica to its transfer and back: a job's end settles the replicas whose requests name
    it (``replicas.services.settle_request``), lane health and arrivals read the outcomes and plans here, the
    API and portal show them, and a product's transfers are found through them. Only the push loop writes
    one, so a job any other client submits, whatever its metadata says, settles nothing."""

    product = models.ForeignKey(
        DataProduct,
        on_delete=models.CASCADE,
        related_name="copy_requests",
        help_text="The product whose copy it is: the request stays in its history whatever becomes of the "
        "replica",
    )
    replica = models.ForeignKey(
        Replica,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="copy_requests",
        help_text="The replica it makes; none once an operator re-routed the copy elsewhere (its end settles "
        "nothing)",
    )
    endpoint = models.CharField(
        max_length=500,
        blank=True,
        help_text="The FTS3 endpoint the job went to; empty: the platform's own service",
    )
    job_id = models.CharField(max_length=64, help_text="The transfer job carrying the copy (FTS3's job id)")
    source_site = models.CharField(max_length=64, help_text="The lane: where the copy leaves from")
    destination_site = models.CharField(max_length=64, help_text="The lane: where it goes")
    via_site = models.CharField(max_length=64, blank=True, help_text="The relay of a multihop copy")
    planned_bps = models.FloatField(null=True, blank=True, help_text="The plan's rate for the copy, bit/s")
    streams = models.PositiveIntegerField(default=0, help_text="TCP streams the plan gave the job")
    streams_per_file = models.PositiveIntegerField(default=0, help_text="TCP streams each file's copy asks")
    predicted_arrival = models.DateTimeField(null=True, blank=True, help_text="When the plan expects it")
    # FTS3's job states, as the transfer service names them: SUBMITTED until the job ends.
    state = models.CharField(max_length=16, choices=JobState.choices, default=JobState.SUBMITTED)
    reasons = models.JSONField(default=list, blank=True, help_text="The failed files' reasons")
    source_problem = models.BooleanField(
        default=False, help_text="It failed for its source (a missing or corrupt file), not for its path"
    )
    submitted = models.DateTimeField(auto_now_add=True)
    settled = models.DateTimeField(null=True, blank=True, help_text="When the job's end reached the replica")

    class Meta:
        ordering = ["submitted", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["endpoint", "job_id", "replica"], name="one_request_per_job_replica"
            )
        ]
        indexes = [
            models.Index(fields=["endpoint", "job_id"]),
            models.Index(fields=["settled"]),
            models.Index(fields=["replica", "-submitted"]),
        ]

    def __str__(self) -> str:
        return f"copy of {self.replica_id} by job {self.job_id}: {self.state}"

    @property
    def lanes(self) -> list[tuple[str, str]]:
        """The lanes the copy crosses: one, or two for a relayed copy."""
        if self.via_site:
            return [(self.source_site, self.via_site), (self.via_site, self.destination_site)]
        return [(self.source_site, self.destination_site)]
