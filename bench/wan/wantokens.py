"""Tokens for the WAN harness's sites (bench/wan/xrdsite.py), as the platform's sites enforce them.

The issuer is the local network's (a real Keycloak, localnet/issuer.py) of the state named by
``SRCNET_STATE`` (``demo`` by default; the tests' own state in a test run), started if it is not running.
Each site trusts it with its own address as its audience (a deployed site's is its host name) and paths from
its root; a copy asks it for the scopes it needs on the file it moves (``read_scopes``, ``write_scopes``).
The harness's namespaces have no link to the host: a site reaches the issuer through a pair of forwarders
that meet at a unix socket (xrdsite.py ``IssuerPath``).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

PROJECT_ROOT = Path(__file__).resolve().parents[2]
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))

from localnet.issuer import LocalIssuer, allow_audience, ensure_issuer  # noqa: E402
from localnet.state import StateDir  # noqa: E402
from localnet.xrootd import SiteTokens, trust_bundle  # noqa: E402
from transfers.tokens import (  # noqa: E402
    TokenClient,
    destination_scopes,
    redact,
    source_scopes,
    url_with_token,
)


def read_scopes(name: str) -> list[str]:
    """What reading ``name`` (a path below a site's root) needs: what the platform's copies ask for its
    source (transfers/tokens.py, read on the file's directory)."""
    return source_scopes("/" + name.lstrip("/"), "/")


def write_scopes(name: str) -> list[str]:
    """What writing ``name`` needs, as a copy's destination (create, modify to overwrite, read to check)."""
    return destination_scopes("/" + name.lstrip("/"), "/")


@dataclass(frozen=True)
class WanIssuer:
    issuer: LocalIssuer
    bundle: Path  # the system's CA bundle and the issuer's CA: what a site trusts the issuer's keys by

    @classmethod
    def of_state(cls, name: str | None = None) -> WanIssuer:
        """The issuer of the state ``name`` (default: ``SRCNET_STATE``, else ``demo``), started if need be."""
        state = StateDir.named(name or os.environ.get("SRCNET_STATE", "demo"))
        return cls(ensure_issuer(state), trust_bundle(state))

    @property
    def port(self) -> int:
        port = urlsplit(self.issuer.url).port
        assert port is not None, self.issuer.url
        return port

    def site_tokens(self, audience: str) -> SiteTokens:
        """What a site of ``audience`` trusts; the issuer may grant that audience from now on."""
        allow_audience(self.issuer, audience)
        return SiteTokens(issuers=(self.issuer.url,), audience=audience, base_path="/")

    def token(self, audience: str, scopes: list[str]) -> str:
        """A fresh token of the platform's transfer client for ``audience`` with ``scopes``."""
        return TokenClient(self.issuer.settings()).fetch(scopes, audience).value


__all__ = ["WanIssuer", "read_scopes", "redact", "url_with_token", "write_scopes"]
