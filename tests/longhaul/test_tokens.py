"""A copy outlives its tokens (docs/tokens.md, "Lifetimes at long round-trip times").

Tokens of 60 s from the issuer, and a root:// third-party copy between two token-enforcing sites in
namespaces of their own, across an emulated 300 ms path (the longest of SKA's), paced at the source to last
well over two token lifetimes. The copy finishes; the service renewed its tokens before they ran out, and
the issuer's own log shows the refreshes (Keycloak logs each grant).

The issuer runs at the host's address on the network's host link, where the sites in their namespaces
reach it (localnet/binding.py does the same for the long-haul demo)."""

from __future__ import annotations

import os
import re
import time
import zlib
from collections.abc import Iterator
from typing import Any

import pytest

from localnet import longhaul as lh
from localnet.issuer import allow_audience, ensure_issuer, stop_issuer
from localnet.longhaul import Plan
from localnet.state import StateDir
from localnet.users import chown_tree
from localnet.xrootd import SERVICE_USER, SiteTokens
from transfers.tokens import TokenClient

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]
SDP, SRC = "LHT-SDP", "LHT-SRC"
PREFIX = "/srcnet/"
LIFETIME_SECONDS = 60
RTT_MS = 300.0
# The path's capacity, at which the source's site paces each connection (as a deployed site is set up):
# 0.5 MB/s, so the copy lasts about 157 s, 2.6 token lifetimes.
RATE_BPS = 4_000_000
SIZE = 75 * 1024 * 1024


def _plan() -> Plan:
    """Two sites, one 300 ms link: the longest RTT of SKA's paths (docs/benchmarks.md)."""
    wn = lh.wannet()
    spec = wn.NetworkSpec(
        sites=["SDP", "SRC"],
        links=[wn.LinkSpec(name="SDP-SRC", a="SDP", b="SRC", rtt_ms=RTT_MS, rate_bps=RATE_BPS)],
        routes={("SDP", "SRC"): ["SDP-SRC"]},
        mtu=lh.NETWORK_MTU,
        cc=lh.SITE_CONGESTION_CONTROL,
    )
    return Plan(spec=spec, endpoints={SDP: "SDP", SRC: "SRC"})


@pytest.fixture(scope="module")
def token_path(test_state: StateDir) -> Iterator[dict[str, Any]]:
    with lh.long_haul(test_state, _plan()) as network:
        issuer = ensure_issuer(test_state, lifetime=LIFETIME_SECONDS, address=network.net.host_address)
        try:
            audiences = {endpoint: f"{endpoint.lower()}.srcnet.test" for endpoint in (SDP, SRC)}
            for audience in audiences.values():
                allow_audience(issuer, audience)
            sites = network.start_sites(
                tokens={
                    endpoint: SiteTokens(issuers=(issuer.url,), audience=audience, base_path=PREFIX)
                    for endpoint, audience in audiences.items()
                }
            )
            for site in sites.values():
                base = site.local_path(PREFIX)
                base.mkdir(parents=True, exist_ok=True)
                chown_tree(base, SERVICE_USER)
            yield {"issuer": issuer, "sites": sites, "audiences": audiences, "network": network}
        finally:
            stop_issuer(test_state)


def _refreshes(log: str) -> list[str]:
    return re.findall(r'type="REFRESH_TOKEN".*?clientId="srcnet-transfers"', log)


@pytest.mark.django_db
def test_a_copy_lasting_several_token_lifetimes_at_300_ms_finishes_with_renewed_tokens(
    test_state: StateDir, token_path: dict[str, Any]
) -> None:
    from localnet.binding import register_loopback_endpoints
    from transfers.executor import copy_file
    from transfers.tokens import tokens_for_copy

    sites, issuer, network = token_path["sites"], token_path["issuer"], token_path["network"]
    assert network.rtt_ms(SDP, SRC) == RTT_MS
    register_loopback_endpoints("LongHaulTokens", sites, PREFIX, token_path["audiences"])
    name = f"long-{os.getpid()}-{time.monotonic_ns()}"
    data = os.urandom(SIZE)
    source_file = sites[SDP].local_path(f"{PREFIX}{name}/product.fits")
    source_file.parent.mkdir(parents=True, exist_ok=True)
    source_file.write_bytes(data)
    chown_tree(source_file.parent, SERVICE_USER)
    source = f"root://{sites[SDP].host}:{sites[SDP].root_port}/{PREFIX}{name}/product.fits"
    destination = f"root://{sites[SRC].host}:{sites[SRC].root_port}/{PREFIX}{name}/product.fits"
    client = TokenClient(issuer.settings())
    log = test_state.sub("log") / "issuer.log"
    refreshed_before = len(_refreshes(log.read_text(errors="replace")))
    tokens = tokens_for_copy(source, destination, client=client)
    assert tokens is not None
    outcome = copy_file(
        source=source,
        destination=destination,
        checksum=f"ADLER32:{zlib.adler32(data) & 0xFFFFFFFF:08x}",
        tokens=tokens,
        timeout=500,
        overwrite=True,
    )
    assert outcome.ok, outcome.error
    assert outcome.seconds > 2 * LIFETIME_SECONDS, f"the copy took {outcome.seconds:.0f} s only"
    assert sites[SRC].local_path(f"{PREFIX}{name}/product.fits").read_bytes() == data
    # Renewed before their end, by the service: each look at the destination and its checksum after the copy
    # use a live token (the destination's at least once a lifetime). The source's token is used only as the
    # copy starts (the pull's open, the grant, its checksum asked while the copy runs: docs/transfers.md), so
    # it is never renewed: a source checksum asked after the copy would have needed a renewal.
    renewals = {"source": tokens.source.renewals, "destination": tokens.destination.renewals}  # type: ignore[attr-defined]
    assert renewals["destination"] >= 2 and renewals["source"] == 0, renewals
    expected = f"{zlib.adler32(data) & 0xFFFFFFFF:08x}"
    assert outcome.source_checksum.lower() == expected, outcome.source_checksum
    refreshed = _refreshes(log.read_text(errors="replace"))[refreshed_before:]
    assert len(refreshed) >= 3, f"the issuer logged {len(refreshed)} refreshes by the transfer client"
