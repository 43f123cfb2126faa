"""Places in the network: telescopes, regional centres, points of presence, and what they host."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from ..choices import Region, SiteKind, StorageRole, TpcScheme
from ..constants import (
    audience_validator,
    hostname_validator,
    mock_storage_allowed,
    name_validator,
    prefix_validator,
    routable_storage_host,
    rse_validator,
)

port_validators = [MinValueValidator(1), MaxValueValidator(65535)]


class Site(models.Model):
    """Any node of the network graph; links join two sites. Concrete kinds extend it."""

    name = models.CharField(max_length=64, unique=True, validators=[name_validator])
    kind = models.CharField(max_length=32, choices=SiteKind.choices, editable=False)
    region = models.CharField(max_length=32, choices=Region.choices)
    country = models.CharField(max_length=2, help_text="ISO 3166-1 alpha-2 code")
    latitude = models.FloatField(validators=[MinValueValidator(-90.0), MaxValueValidator(90.0)])
    longitude = models.FloatField(validators=[MinValueValidator(-180.0), MaxValueValidator(180.0)])
    vrf = models.ForeignKey(
        "topology.Vrf",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="sites",
        help_text="The VRF the site joins by configuration",
    )
    description = models.TextField(blank=True)

    KIND: str = SiteKind.POP

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.kind = self.KIND
        super().save(*args, **kwargs)

    def clean(self) -> None:
        super().clean()
        if self.country and not (
            len(self.country) == 2 and self.country.isalpha() and self.country.isupper()
        ):
            raise ValidationError({"country": "Use a two-letter upper-case ISO country code."})


class Telescope(Site):
    """An SKA telescope; its Science Data Processor pushes products out through an access link."""

    KIND = SiteKind.TELESCOPE
    daily_volume_bytes = models.BigIntegerField(
        default=10**15, validators=[MinValueValidator(0)], help_text="Data products produced per day"
    )
    sdp_buffer_bytes = models.BigIntegerField(
        default=2 * 10**15,
        validators=[MinValueValidator(1)],
        help_text="What the SDP storage holds before it must have pushed",
    )

    class Meta:
        ordering = ["name"]

    @property
    def sustained_rate_bps(self) -> float:
        return self.daily_volume_bytes * 8 / 86400


class RegionalCentre(Site):
    """An SKA Regional Centre, or a distribution centre that relays products to SRCs."""

    KIND = SiteKind.SRC
    is_distribution_centre = models.BooleanField(default=False)
    share_weight = models.FloatField(
        default=1.0,
        validators=[MinValueValidator(0.0)],
        help_text="Relative share of each telescope's products (1-replica policy)",
    )
    budget_per_telescope_bps = models.BigIntegerField(default=20 * 10**9, validators=[MinValueValidator(0)])
    peak_bps = models.BigIntegerField(default=70 * 10**9, validators=[MinValueValidator(0)])

    class Meta:
        ordering = ["name"]
        verbose_name = "regional centre"

    def save(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.KIND = SiteKind.DISTRIBUTION_CENTRE if self.is_distribution_centre else SiteKind.SRC
        super().save(*args, **kwargs)

    def clean(self) -> None:
        super().clean()
        if self.budget_per_telescope_bps and self.peak_bps and self.budget_per_telescope_bps > self.peak_bps:
            raise ValidationError(
                {"budget_per_telescope_bps": "The per-telescope budget exceeds the site's peak."}
            )


class PointOfPresence(Site):
    """A network node (a cable landing, an exchange) that carries traffic but stores nothing."""

    KIND = SiteKind.POP
    operator = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "point of presence"


class StorageEndpoint(models.Model):
    """A storage service at a site, mirrored as a Rucio RSE: its protocols, ports and path prefix."""

    name = models.CharField(max_length=64, unique=True, validators=[rse_validator])
    site = models.ForeignKey(Site, on_delete=models.PROTECT, related_name="storage_endpoints")
    role = models.CharField(max_length=16, choices=StorageRole.choices, default=StorageRole.DISK)
    hostname = models.CharField(max_length=255, validators=[hostname_validator, routable_storage_host])
    root_port = models.PositiveIntegerField(default=1094, validators=port_validators)
    http_port = models.PositiveIntegerField(default=443, validators=port_validators)
    prefix = models.CharField(max_length=255, default="/srcnet/", validators=[prefix_validator])
    tpc_scheme = models.CharField(max_length=8, choices=TpcScheme.choices, default=TpcScheme.DAVS)
    # The audience the site's storage accepts in WLCG tokens (docs/tokens.md). Blank: its host name, as Rucio
    # and FTS derive it since the 2024 data challenge; sites that share a host (the local network's, all on
    # loopback) each need their own.
    token_audience = models.CharField(max_length=255, blank=True, default="", validators=[audience_validator])
    capacity_bytes = models.BigIntegerField(null=True, blank=True, validators=[MinValueValidator(0)])
    is_active = models.BooleanField(default=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        super().clean()
        errors = {}
        if self.prefix and not (self.prefix.startswith("/") and self.prefix.endswith("/")):
            errors["prefix"] = "The prefix must start and end with '/'."
        if self.root_port and self.http_port and self.root_port == self.http_port:
            errors["http_port"] = "The HTTP port must differ from the root:// port."
        site = Site.objects.filter(pk=self.site_id).first() if self.site_id else None
        if site is not None and site.kind == SiteKind.POP:
            errors["site"] = "A point of presence hosts no storage."
        if self.tpc_scheme == TpcScheme.MOCK and not mock_storage_allowed():
            errors["tpc_scheme"] = (
                "mock:// storage moves no bytes and serves only the control plane's load benchmark and its "
                "tests: refused unless SRCNET_MOCK_STORAGE is on."
            )
        if site is not None and (self.role == StorageRole.SDP) != (site.kind == SiteKind.TELESCOPE):
            errors["role"] = "SDP storage belongs to a telescope, and a telescope's storage is SDP storage."
        if errors:
            raise ValidationError(errors)

    def url(self, scheme: str, path: str) -> str:
        """The URL of ``path`` (relative to the prefix) over ``scheme``."""
        relative = path.lstrip("/")
        if scheme == TpcScheme.ROOT:
            return f"root://{self.hostname}:{self.root_port}/{self.prefix}{relative}"
        if self.tpc_scheme == TpcScheme.MOCK:  # a mock endpoint serves mock:// alone (on its HTTP port)
            return f"mock://{self.hostname}:{self.http_port}{self.prefix}{relative}"
        return f"{scheme}://{self.hostname}:{self.http_port}{self.prefix}{relative}"

    @property
    def audience(self) -> str:
        """The audience of tokens for this endpoint's storage."""
        return self.token_audience or self.hostname

    def tpc_url(self, path: str) -> str:
        return self.url(self.tpc_scheme, path)


class Dtn(models.Model):
    """A data transfer node: the host that moves a site's bytes, tuned for long round trips."""

    name = models.CharField(max_length=64, unique=True, validators=[name_validator])
    site = models.ForeignKey(Site, on_delete=models.PROTECT, related_name="dtns")
    hostname = models.CharField(max_length=255)
    nic_speed_bps = models.BigIntegerField(default=100 * 10**9, validators=[MinValueValidator(1)])
    tcp_window_bytes = models.BigIntegerField(
        default=2**30,
        validators=[MinValueValidator(65536)],
        help_text="Largest TCP window the host's tuning allows",
    )
    tuning_profile = models.CharField(max_length=64, default="dtn-300ms")

    class Meta:
        ordering = ["name"]
        verbose_name = "DTN"

    def __str__(self) -> str:
        return self.name
