"""Point every storage endpoint of the database at a local XRootD server of its own (needs Django set up)."""

from __future__ import annotations

from .state import StateDir
from .xrootd import LocalSite, ensure_site


def bind_local_sites(state: StateDir, *, extra_lines: list[str] | None = None) -> dict[str, LocalSite]:
    """Start (or find) one site per active endpoint and write its loopback host and ports to the endpoint."""
    from topology.models import StorageEndpoint

    sites: dict[str, LocalSite] = {}
    for endpoint in StorageEndpoint.objects.filter(is_active=True).order_by("name"):
        site = ensure_site(state, endpoint.name, extra_lines=extra_lines)
        # 127.0.0.1, not 'localhost': XRootD's native TPC rendezvous fails ("tpc authorization expired") when
        # the destination resolves 'localhost' to another address than the source saw; the host certificate
        # carries IP:127.0.0.1 as a subjectAltName, so HTTPS third-party copy verifies it too.
        endpoint.hostname, endpoint.root_port, endpoint.http_port = (
            "127.0.0.1",
            site.root_port,
            site.http_port,
        )
        endpoint.full_clean()
        endpoint.save(update_fields=["hostname", "root_port", "http_port"])
        sites[endpoint.name] = site
    return sites
