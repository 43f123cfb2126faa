"""A real token issuer (Keycloak) and two token-enforcing XRootD sites, shared by the tests of this folder."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import requests

from localnet.issuer import LocalIssuer, allow_audience
from localnet.issuer_rucio import RucioClient, ensure_rucio_client
from localnet.state import StateDir
from localnet.users import chown_tree
from localnet.xrootd import SERVICE_USER, LocalSite, SiteTokens, ensure_site, stop_site
from transfers.tokens import Token, TokenClient

# Two sites on loopback: each with an audience of its own (they share a host), both with prefix /srcnet/.
SITES = {"TOKEN-A": "token-a.srcnet.test", "TOKEN-B": "token-b.srcnet.test"}
PREFIX = "/srcnet/"


@dataclass(frozen=True)
class TokenBench:
    issuer: LocalIssuer
    client: TokenClient
    sites: dict[str, LocalSite]
    audiences: dict[str, str]
    state: StateDir

    def token(self, site: str, *scopes: str) -> Token:
        return self.client.fetch(list(scopes), self.audiences[site])

    def log_size(self, site: str) -> int:
        return (self.state.sub("log") / f"xrootd-{site}.out").stat().st_size

    def site_log(self, site: str, since: int = 0) -> str:
        """What the site logged from byte ``since`` on (a test reads only what its own requests caused)."""
        with open(self.state.sub("log") / f"xrootd-{site}.out", "rb") as log:
            log.seek(since)
            return log.read().decode(errors="replace")


@pytest.fixture(scope="package")
def token_bench(test_state: StateDir, token_issuer: LocalIssuer) -> Iterator[TokenBench]:
    issuer = token_issuer
    sites = {}
    try:
        for name, audience in SITES.items():
            allow_audience(issuer, audience)
            stop_site(test_state, name)  # a site of that name left running without tokens is restarted
            sites[name] = ensure_site(
                test_state,
                name,
                tokens=SiteTokens(issuers=(issuer.url,), audience=audience, base_path=PREFIX),
            )
            base = sites[name].local_path(PREFIX)
            base.mkdir(parents=True, exist_ok=True)
            chown_tree(base, SERVICE_USER)  # the server makes the copies' folders below it
        client = TokenClient(issuer.settings())
        yield TokenBench(issuer, client, sites, dict(SITES), test_state)
    finally:
        for name in SITES:
            stop_site(test_state, name)


@pytest.fixture(scope="package")
def rucio_client(test_state: StateDir, token_bench: TokenBench) -> RucioClient:
    """Rucio's client at the bench's issuer (localnet/issuer_rucio.py)."""
    return ensure_rucio_client(test_state, token_bench.issuer)


def rucio_style_token(bench: TokenBench, client: RucioClient, *, audience: str, scope: str) -> str:
    """A token asked for as Rucio asks (rucio.core.oidc.request_token): client credentials, the audience
    as a parameter."""
    answer = requests.post(
        bench.issuer.token_endpoint,
        auth=(client.client_id, client.client_secret),
        data={"grant_type": "client_credentials", "audience": audience, "scope": scope},
        verify=str(bench.issuer.ca_file),
        timeout=30,
    )
    answer.raise_for_status()
    return str(answer.json()["access_token"])


@pytest.fixture
def endpoints(token_bench: TokenBench, db) -> None:  # type: ignore[no-untyped-def]
    from localnet.binding import register_loopback_endpoints

    register_loopback_endpoints("TokenSites", token_bench.sites, PREFIX, token_bench.audiences)


def token_settings(bench: TokenBench, **changes: str) -> dict[str, str]:
    """SRCNET_TOKENS for the bench's issuer and client, with ``changes`` to its IssuerSettings fields."""
    from dataclasses import replace

    return replace(bench.client.issuer, **changes).as_setting()  # type: ignore[arg-type]


def davs(site: LocalSite, path: str) -> str:
    return f"https://127.0.0.1:{site.http_port}/{path.lstrip('/')}"


def http(method: str, url: str, bench: TokenBench, token: str = "", **kwargs: object) -> requests.Response:
    headers = dict(kwargs.pop("headers", {}) or {})  # type: ignore[call-overload]
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return requests.request(
        method,
        url,
        headers=headers,
        verify=str(bench.issuer.ca_file),
        timeout=30,
        **kwargs,  # type: ignore[arg-type]
    )
