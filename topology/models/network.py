"""The network between sites: VRFs, links and the ordered paths through them."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

from ..choices import VRF_SCOPE_RANK, LinkKind, VrfScope
from ..constants import MAX_RTT_MS, name_validator
from ..physics import path_metrics


class Vrf(models.Model):
    """A VRF of the SKA overlay: one per country, aggregated by a backbone VRF, peered globally."""

    name = models.CharField(max_length=64, unique=True, validators=[name_validator])
    scope = models.CharField(max_length=16, choices=VrfScope.choices)
    route_distinguisher = models.CharField(
        max_length=32,
        unique=True,
        null=True,
        blank=True,
        validators=[RegexValidator(r"^\d+:\d+$", "Use ASN:number.")],
    )
    parent = models.ForeignKey(
        "self",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="children",
        help_text="The VRF that aggregates this one",
    )
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "VRF"

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        super().clean()
        if self.parent_id is None:
            return
        parent = Vrf.objects.filter(pk=self.parent_id).first()
        if parent is None:
            return
        if VRF_SCOPE_RANK[VrfScope(parent.scope)] <= VRF_SCOPE_RANK[VrfScope(self.scope)]:
            raise ValidationError({"parent": "The aggregating VRF must have a broader scope."})
        seen = {self.pk}
        node: Vrf | None = parent
        while node is not None:
            if node.pk in seen:
                raise ValidationError({"parent": "VRF aggregation must not form a cycle."})
            seen.add(node.pk)
            node = node.parent


class Link(models.Model):
    """A network link between two sites, with what the scheduler needs: capacity, RTT, loss and cost."""

    name = models.CharField(max_length=64, unique=True, validators=[name_validator])
    a_end = models.ForeignKey("topology.Site", on_delete=models.PROTECT, related_name="links_a")
    b_end = models.ForeignKey("topology.Site", on_delete=models.PROTECT, related_name="links_b")
    kind = models.CharField(max_length=16, choices=LinkKind.choices, default=LinkKind.BACKBONE)
    capacity_bps = models.BigIntegerField(validators=[MinValueValidator(1)])
    rtt_ms = models.FloatField(validators=[MinValueValidator(0.001), MaxValueValidator(MAX_RTT_MS)])
    loss_rate = models.FloatField(default=0.0, validators=[MinValueValidator(0.0), MaxValueValidator(0.5)])
    owner = models.CharField(max_length=64, blank=True, help_text="The NREN or carrier operating the link")
    capex_eur = models.FloatField(default=0.0, validators=[MinValueValidator(0.0)])
    opex_eur_per_year = models.FloatField(default=0.0, validators=[MinValueValidator(0.0)])
    vrfs = models.ManyToManyField(Vrf, blank=True, related_name="links")
    is_up = models.BooleanField(default=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        super().clean()
        if self.a_end_id and self.a_end_id == self.b_end_id:
            raise ValidationError({"b_end": "A link joins two different sites."})

    def other_end(self, site_id: int) -> int:
        return self.b_end_id if site_id == self.a_end_id else self.a_end_id


class NetworkPath(models.Model):
    """An ordered walk through links from a source site to a destination site (after NetBox's CablePath).

    Capacity (the bottleneck), RTT (the sum), loss and cost are derived from the hops and stored flattened
    so lists and the planner read them without walking the hops."""

    name = models.CharField(max_length=140, unique=True)
    source = models.ForeignKey("topology.Site", on_delete=models.PROTECT, related_name="paths_out")
    destination = models.ForeignKey("topology.Site", on_delete=models.PROTECT, related_name="paths_in")
    vrf = models.ForeignKey(Vrf, on_delete=models.PROTECT, null=True, blank=True, related_name="paths")
    links = models.ManyToManyField(Link, through="PathHop", related_name="paths")
    is_computed = models.BooleanField(default=True, help_text="Computed from the links, not declared")
    capacity_bps = models.BigIntegerField(default=0, editable=False)
    rtt_ms = models.FloatField(default=0.0, editable=False)
    loss_rate = models.FloatField(default=0.0, editable=False)
    opex_eur_per_year = models.FloatField(default=0.0, editable=False)
    hop_count = models.PositiveIntegerField(default=0, editable=False)

    class Meta:
        ordering = ["source__name", "destination__name", "rtt_ms"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        super().clean()
        if self.source_id and self.source_id == self.destination_id:
            raise ValidationError({"destination": "A path goes from one site to another."})

    def ordered_links(self) -> list[Link]:
        return [hop.link for hop in self.hops.select_related("link").order_by("position")]

    def refresh_metrics(self) -> None:
        """Recompute the stored metrics from the hops (call after the hops change)."""
        links = self.ordered_links()
        metrics = path_metrics(
            [(lk.capacity_bps, lk.rtt_ms, lk.loss_rate, lk.opex_eur_per_year) for lk in links]
        )
        self.capacity_bps = metrics.capacity_bps
        self.rtt_ms = metrics.rtt_ms
        self.loss_rate = metrics.loss_rate
        self.opex_eur_per_year = metrics.opex_eur_per_year
        self.hop_count = len(links)
        self.save(update_fields=["capacity_bps", "rtt_ms", "loss_rate", "opex_eur_per_year", "hop_count"])


class PathHop(models.Model):
    """One link of a path, at its position."""

    path = models.ForeignKey(NetworkPath, on_delete=models.CASCADE, related_name="hops")
    link = models.ForeignKey(Link, on_delete=models.PROTECT, related_name="hops")
    position = models.PositiveIntegerField()

    class Meta:
        ordering = ["path", "position"]
        constraints = [models.UniqueConstraint(fields=["path", "position"], name="unique_hop_position")]

    def __str__(self) -> str:
        return f"{self.path_id}#{self.position}: {self.link_id}"
