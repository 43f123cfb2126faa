"""Point every storage endpoint of the database at a local XRootD server of its own (needs Django set up):
on loopback, or each in its site's namespace of the long-haul network."""

from __future__ import annotations

from typing import Any

from .issuer import LocalIssuer, allow_audience, ensure_issuer, local_audience
from .state import StateDir
from .xrootd import LocalSite, SiteTokens, ensure_site


def bind_local_sites(
    state: StateDir, *, extra_lines: list[str] | None = None, long_haul: bool = False
) -> dict[str, LocalSite]:
    """Start (or find) one site per active endpoint and write its host and ports to the endpoint.

    Every site enforces tokens from the state's issuer (started here), each with an audience of its own. With
    ``long_haul`` the state's long-haul network is brought up first (localnet/longhaul.py) from the topology
    in the database, each site runs in its own site's namespace behind the emulator, and the issuer listens
    at the host's address on the network's host link, which the sites reach directly (no WAN delay, as a
    site reaches SKA-IAM over the general internet rather than the data path)."""
    from topology.models import StorageEndpoint

    endpoints = list(StorageEndpoint.objects.filter(is_active=True).order_by("name"))
    if long_haul:
        from .longhaul import plan_network, start_network

        network = start_network(state, plan_network())
        sites = start_long_haul_token_sites(state, network, extra_lines=extra_lines)
    else:
        issuer = ensure_issuer(state)
        sites = {
            endpoint.name: ensure_token_site(
                state, issuer, endpoint.name, base_path=endpoint.prefix, extra_lines=extra_lines
            )
            for endpoint in endpoints
        }
    bind_endpoints(sites)
    return sites


def start_long_haul_token_sites(
    state: StateDir, network: Any, names: dict[str, str] | None = None, **options: Any
) -> dict[str, LocalSite]:
    """The long-haul ``network``'s sites (``LongHaul.start_sites``; ``names`` and ``options`` as its), each
    enforcing tokens of the state's issuer, which listens at the host's address on the network's host link
    (the sites reach it directly, as a site reaches SKA-IAM over the general internet rather than the data
    path); each endpoint's audience in the database is its site's."""
    from topology.models import StorageEndpoint

    issuer = ensure_issuer(state, address=network.net.host_address)
    prefixes = dict(
        StorageEndpoint.objects.filter(name__in=network.plan.endpoints).values_list("name", "prefix")
    )
    tokens = {
        endpoint: site_tokens(issuer, (names or {}).get(endpoint, endpoint), prefixes[endpoint])
        for endpoint in network.plan.endpoints
    }
    sites: dict[str, LocalSite] = network.start_sites(names, tokens=tokens, **options)
    return sites


def site_tokens(issuer: LocalIssuer, name: str, base_path: str = "/srcnet/") -> SiteTokens:
    """What the local site ``name`` trusts: ``issuer``'s tokens for its own audience (``local_audience``;
    the local sites share addresses), their paths below ``base_path`` (its endpoint's prefix). The issuer's
    transfer client may ask for that audience from now on."""
    audience = local_audience(name)
    allow_audience(issuer, audience)
    return SiteTokens(issuers=(issuer.url,), audience=audience, base_path=base_path)


def ensure_token_site(
    state: StateDir, issuer: LocalIssuer, name: str, *, base_path: str = "/srcnet/", **options: Any
) -> LocalSite:
    """A loopback site that serves nobody without a token of ``issuer`` (``site_tokens``); ``options`` as
    ensure_site's."""
    return ensure_site(state, name, tokens=site_tokens(issuer, name, base_path), **options)


def bind_endpoints(sites: dict[str, LocalSite], **extra: Any) -> None:
    """Write each site's host, ports and token audience to the storage endpoint of that name (``extra``:
    other fields to set on every one of them, e.g. ``tpc_scheme``)."""
    from topology.models import StorageEndpoint

    for name, site in sites.items():
        endpoint = StorageEndpoint.objects.get(name=name)
        # On loopback 127.0.0.1, not 'localhost': XRootD's native TPC rendezvous fails ("tpc authorization
        # expired") when the destination resolves 'localhost' to another address than the source saw; the
        # host certificate carries IP:127.0.0.1 (a long-haul site's carries its namespace's address too), so
        # HTTPS third-party copy verifies it.
        endpoint.hostname, endpoint.root_port, endpoint.http_port = site.host, site.root_port, site.http_port
        endpoint.token_audience = site.audience
        for key, value in extra.items():
            setattr(endpoint, key, value)
        endpoint.full_clean()
        endpoint.save(update_fields=["hostname", "root_port", "http_port", "token_audience", *extra])


def register_loopback_endpoints(
    centre_name: str, sites: dict[str, LocalSite], prefix: str, audiences: dict[str, str] | None = None
) -> None:
    """Register (or update) a storage endpoint per local site, named as the site, under one regional
    centre made for them: for benchmarks and tests that start their own sites. ``audiences``: the token
    audience of those that enforce tokens."""
    from topology.models import RegionalCentre, StorageEndpoint

    centre, _ = RegionalCentre.objects.get_or_create(
        name=centre_name, defaults={"region": "europe", "country": "GB", "latitude": 0, "longitude": 0}
    )
    for name, site in sites.items():
        StorageEndpoint.objects.update_or_create(
            name=name,
            defaults={
                "site": centre,
                "hostname": site.host,
                "root_port": site.root_port,
                "http_port": site.http_port,
                "prefix": prefix,
                "token_audience": (audiences or {}).get(name, ""),
            },
        )
