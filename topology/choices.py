"""Enumerations of the topology models."""

from django.db import models


class SiteKind(models.TextChoices):
    TELESCOPE = "telescope", "Telescope"
    SRC = "src", "SKA Regional Centre"
    DISTRIBUTION_CENTRE = "distribution_centre", "Distribution centre"
    POP = "pop", "Network point of presence"


class Region(models.TextChoices):
    AFRICA = "africa", "Africa"
    ASIA = "asia", "Asia"
    EUROPE = "europe", "Europe"
    NORTH_AMERICA = "north_america", "North America"
    OCEANIA = "oceania", "Oceania"
    SOUTH_AMERICA = "south_america", "South America"


class StorageRole(models.TextChoices):
    SDP = "sdp", "SDP (telescope output buffer)"
    DISK = "disk", "SRC disk"
    BUFFER = "buffer", "Distribution centre buffer"


def landing_role(is_distribution_centre: bool) -> StorageRole:
    """The storage copies land on at a site: a distribution centre's buffer, else the SRC's disk."""
    return StorageRole.BUFFER if is_distribution_centre else StorageRole.DISK


class TpcScheme(models.TextChoices):
    ROOT = "root", "root:// (XRootD third-party copy)"
    DAVS = "davs", "davs:// (HTTP third-party copy)"
    # gfal2's mock plugin: copies that move no bytes, for the control plane's load benchmark and its tests
    # only (SRCNET_MOCK_STORAGE; transfers/mock_storage.py).
    MOCK = "mock", "mock:// (no bytes moved: benchmarks and tests only)"


class LinkKind(models.TextChoices):
    ACCESS = "access", "Access"
    BACKBONE = "backbone", "Backbone"
    SUBMARINE = "submarine", "Submarine"
    CAMPUS = "campus", "Campus"


class VrfScope(models.TextChoices):
    NATIONAL = "national", "National"
    BACKBONE = "backbone", "Backbone"
    GLOBAL = "global", "Global"


VRF_SCOPE_RANK = {VrfScope.NATIONAL: 0, VrfScope.BACKBONE: 1, VrfScope.GLOBAL: 2}
