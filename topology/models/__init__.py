"""Topology models."""

from .network import Link, NetworkPath, PathHop, Vrf
from .sites import Dtn, PointOfPresence, RegionalCentre, Site, StorageEndpoint, Telescope

__all__ = [
    "Dtn",
    "Link",
    "NetworkPath",
    "PathHop",
    "PointOfPresence",
    "RegionalCentre",
    "Site",
    "StorageEndpoint",
    "Telescope",
    "Vrf",
]
