"""Point every storage endpoint of the database at a local XRootD server of its own (needs Django set up):
on loopback, or each in its site's namespace of the long-haul network."""

from __future__ import annotations

from typing import Any

from .state import StateDir
from .xrootd import LocalSite, ensure_site


def bind_local_sites(
    state: StateDir, *, extra_lines: list[str] | None = None, long_haul: bool = False
) -> dict[str, LocalSite]:
    """Start (or find) one site per active endpoint and write its host and ports to the endpoint.

    With ``long_haul`` the state's long-haul network is brought up first (localnet/longhaul.py) from the
    topology in the database, and each site runs in its own site's namespace behind the emulator."""
    from topology.models import StorageEndpoint

    if long_haul:
        from .longhaul import plan_network, start_network

        network = start_network(state, plan_network())
        sites = network.start_sites(extra_lines=extra_lines)
    else:
        sites = {
            endpoint.name: ensure_site(state, endpoint.name, extra_lines=extra_lines)
            for endpoint in StorageEndpoint.objects.filter(is_active=True).order_by("name")
        }
    bind_endpoints(sites)
    return sites


def bind_endpoints(sites: dict[str, LocalSite], **extra: Any) -> None:
    """Write each site's host and ports to the storage endpoint of that name (``extra``: other fields to
    set on every one of them, e.g. ``tpc_scheme``)."""
    from topology.models import StorageEndpoint

    for name, site in sites.items():
        endpoint = StorageEndpoint.objects.get(name=name)
        # On loopback 127.0.0.1, not 'localhost': XRootD's native TPC rendezvous fails ("tpc authorization
        # expired") when the destination resolves 'localhost' to another address than the source saw; the
        # host certificate carries IP:127.0.0.1 (a long-haul site's carries its namespace's address too), so
        # HTTPS third-party copy verifies it.
        endpoint.hostname, endpoint.root_port, endpoint.http_port = site.host, site.root_port, site.http_port
        for key, value in extra.items():
            setattr(endpoint, key, value)
        endpoint.full_clean()
        endpoint.save(update_fields=["hostname", "root_port", "http_port", *extra])
