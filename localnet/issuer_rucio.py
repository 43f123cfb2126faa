"""Rucio's client at the local token issuer: what lets the local Rucio's conveyor ask for tokens as it does
of SKA-IAM in production (docs/tokens.md, "Rucio mode").

Rucio's FTS3 transfertool (``rucio.core.oidc.request_token``) asks with a client credentials grant:
``audience=<the RSE's or the FTS3 endpoint's host>`` and ``scope=storage.read:<prefix> offline_access``
(``storage.modify storage.read`` at a destination, ``fts`` for the FTS3 endpoint). INDIGO IAM takes the
audience as that parameter; Keycloak does not, so the client carries the project's script mapper that
does (localnet/keycloak/wlcg-audience.js). Its tokens also name the transfer service's client in their
audience: Keycloak's token exchange (RFC 8693), by which the service takes over a managed submitted token,
requires the exchanging client to be in the subject token's audience.

Rucio reads its client from ``[oidc] idpsecrets`` (a JSON file) and ``[oidc] admin_issuer`` (its key in that
file): ``rucio_oidc_files`` writes both for localnet/rucio.py."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transfers.tokens import FTS_SCOPE

from .issuer import (
    AUDIENCE_SCOPE_PREFIX,
    REALM,
    RUCIO_CLIENT,
    STORAGE_SCOPES,
    TRANSFER_CLIENT,
    VO_GROUP,
    LocalIssuer,
    protocol_mapper,
)
from .state import StateDir

RUCIO_CLIENT_SECRET = "issuer-rucio-client-secret"
# The name Rucio's configuration gives the issuer ([oidc] admin_issuer, the key in idpsecrets.json).
RUCIO_ISSUER_NAME = "srcnet"


@dataclass(frozen=True)
class RucioClient:
    """Rucio's client at the issuer, and the subject (``sub``) its tokens carry."""

    issuer: str
    client_id: str
    client_secret: str = field(repr=False)
    subject: str
    ca_file: str


def rucio_client_representation(secret: str) -> dict[str, Any]:
    """Rucio's client as Keycloak's admin API takes it (pure: tested alone)."""
    return {
        "clientId": RUCIO_CLIENT,
        "enabled": True,
        "publicClient": False,
        "secret": secret,
        "serviceAccountsEnabled": True,
        "standardFlowEnabled": False,
        "directAccessGrantsEnabled": False,
        "defaultClientScopes": ["wlcg"],
        "optionalClientScopes": [*STORAGE_SCOPES, "offline_access", FTS_SCOPE],
        "protocolMappers": [
            protocol_mapper("audience parameter", "script-wlcg-audience.js"),
            protocol_mapper(
                "transfer service audience",
                "oidc-audience-mapper",
                **{"included.client.audience": TRANSFER_CLIENT},
            ),
        ],
    }


def ensure_rucio_client(state: StateDir, issuer: LocalIssuer) -> RucioClient:
    """Make Rucio's client (once), let it ask for every site audience the realm has, put its service
    account in the VO group; returns it. Idempotent."""
    admin = issuer.admin_session()
    realm = f"{issuer.base}/admin/realms/{REALM}"
    secret = state.secret(RUCIO_CLIENT_SECRET)
    scopes = {s["name"]: s["id"] for s in admin.get(f"{realm}/client-scopes").json()}
    if FTS_SCOPE not in scopes:
        admin.post(
            f"{realm}/client-scopes",
            json={
                "name": FTS_SCOPE,
                "protocol": "openid-connect",
                "attributes": {"include.in.token.scope": "true"},
            },
        ).raise_for_status()
        scopes = {s["name"]: s["id"] for s in admin.get(f"{realm}/client-scopes").json()}
    found = admin.get(f"{realm}/clients", params={"clientId": RUCIO_CLIENT}).json()
    if not found:
        admin.post(f"{realm}/clients", json=rucio_client_representation(secret)).raise_for_status()
        found = admin.get(f"{realm}/clients", params={"clientId": RUCIO_CLIENT}).json()
    client = found[0]["id"]
    for name, scope in scopes.items():
        if name.startswith(AUDIENCE_SCOPE_PREFIX):
            admin.put(f"{realm}/clients/{client}/optional-client-scopes/{scope}").raise_for_status()
    account = admin.get(f"{realm}/clients/{client}/service-account-user").json()
    groups = {g["name"]: g["id"] for g in admin.get(f"{realm}/groups").json()}
    if VO_GROUP in groups:
        admin.put(f"{realm}/users/{account['id']}/groups/{groups[VO_GROUP]}").raise_for_status()
    return RucioClient(
        issuer=issuer.url,
        client_id=RUCIO_CLIENT,
        client_secret=secret,
        subject=str(account["id"]),
        ca_file=str(issuer.ca_file),
    )


def rucio_oidc_files(client: RucioClient, folder: Path) -> dict[str, str]:
    """Write Rucio's ``idpsecrets.json`` (0600) into ``folder``; returns the ``[oidc]`` options that name
    it. The issuer URL ends in a slash: Rucio finds the discovery document by joining
    ``.well-known/openid-configuration`` to it."""
    secrets = folder / "idpsecrets.json"
    secrets.write_text(
        json.dumps(
            {
                RUCIO_ISSUER_NAME: {
                    "issuer": client.issuer.rstrip("/") + "/",
                    "client_id": client.client_id,
                    "client_secret": client.client_secret,
                }
            }
        )
    )
    secrets.chmod(0o600)
    return {"idpsecrets": str(secrets), "admin_issuer": RUCIO_ISSUER_NAME}
