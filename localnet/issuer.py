"""The local network's token issuer: a real Keycloak, serving one realm that issues WLCG JWT profile 1.0
access tokens (docs/tokens.md, docs/adr/0012-keycloak-as-the-local-token-issuer.md).

Keycloak is installed by scripts/install-keycloak.sh (Maven Central, pinned digest) and runs here as an
unprivileged account over HTTPS with the local CA's host certificate: scitokens-cpp, which XRootD's token
plugin uses to fetch the issuer's keys, accepts only an ``https://`` issuer. Its database (H2, a file) and
everything it writes live in the state folder.

The realm's shape is the WLCG profile's: ``wlcg.ver``, ``wlcg.groups``, ``sub`` and ``nbf`` on every access
token (``nbf`` by the project's script mapper, localnet/keycloak/); ``storage.read:<path>``,
``storage.create:<path>`` and ``storage.modify:<path>`` as dynamic scopes; and one optional scope per storage
site, ``aud:<audience>``, which sets that site's audience (Keycloak takes no ``audience`` parameter on a
client credentials grant, as INDIGO IAM does).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from transfers.tokens import IssuerSettings

from .pki import address_credentials, ensure_pki, host_credentials
from .processes import (
    ServiceError,
    collect,
    pid_file,
    running,
    start_daemon,
    stop_daemon,
    stop_pid,
    wait_for_port,
)
from .state import StateDir
from .users import chown_tree, service_account

KEYCLOAK_VERSION = "26.4.0"
ISSUER_ACCOUNT = "srcnet-issuer"
REALM = "srcnet"
TRANSFER_CLIENT = "srcnet-transfers"
# Rucio's client (localnet/issuer_rucio.py), made when a local Rucio is to ask for tokens.
RUCIO_CLIENT = "rucio"
ADMIN_USER = "admin"
ADMIN_PASSWORD_SECRET = "issuer-admin-password"
CLIENT_SECRET = "issuer-client-secret"
# The VO group the transfer service's account belongs to (the tokens' wlcg.groups).
VO_GROUP = "ska"
STORAGE_SCOPES = ("storage.read", "storage.create", "storage.modify", "storage.stage")
AUDIENCE_SCOPE_PREFIX = "aud:"
DEFAULT_LIFETIME_SECONDS = 1200
LOOPBACK = "127.0.0.1"


def keycloak_root() -> Path:
    """Where scripts/install-keycloak.sh put Keycloak (the same rule as the script's)."""
    override = os.environ.get("SRCNET_KEYCLOAK_ROOT")
    if override:
        return Path(override)
    if os.geteuid() == 0:
        return Path("/opt/srcnet")
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "srcnet"


def keycloak_home() -> Path:
    home = keycloak_root() / f"keycloak-{KEYCLOAK_VERSION}"
    if not (home / ".srcnet-build-stamp").exists():
        raise ServiceError(
            f"Keycloak {KEYCLOAK_VERSION} is not installed in {home}: run scripts/bootstrap.sh"
        )
    return home


@dataclass(frozen=True)
class LocalIssuer:
    """A running issuer: its URL (the tokens' ``iss``), the CA that signed its certificate, and the transfer
    service's client."""

    url: str
    ca_file: Path
    client_id: str
    client_secret: str
    admin_password: str
    port: int

    @property
    def base(self) -> str:
        return self.url.rsplit("/realms/", 1)[0]

    @property
    def token_endpoint(self) -> str:
        return f"{self.url}/protocol/openid-connect/token"

    def settings(self) -> IssuerSettings:
        """The transfer client's settings for this issuer (what SRCNET_TOKEN_* say to the platform)."""
        return IssuerSettings(
            url=self.url,
            client_id=self.client_id,
            client_secret=self.client_secret,
            ca_file=str(self.ca_file),
            audience_style="scope",
        )

    def admin_session(self) -> AdminSession:
        """A master-realm admin's session (the realm's configuration is made through it)."""
        answer = requests.post(
            f"{self.base}/realms/master/protocol/openid-connect/token",
            data={
                "grant_type": "password",
                "client_id": "admin-cli",
                "username": ADMIN_USER,
                "password": self.admin_password,
            },
            verify=str(self.ca_file),
            timeout=30,
        )
        answer.raise_for_status()
        return AdminSession(answer.json()["access_token"], str(self.ca_file))


class AdminSession:
    """Keycloak's admin API with one admin token. The CA is passed on every request: a ``requests.Session``'s
    own ``verify`` loses to REQUESTS_CA_BUNDLE or CURL_CA_BUNDLE in the environment."""

    def __init__(self, token: str, ca_file: str) -> None:
        self._headers = {"Authorization": f"Bearer {token}"}
        self._ca_file = ca_file

    def request(self, method: str, url: str, **kwargs: Any) -> requests.Response:
        kwargs.setdefault("timeout", 30)
        return requests.request(method, url, headers=self._headers, verify=self._ca_file, **kwargs)

    def get(self, url: str, **kwargs: Any) -> requests.Response:
        return self.request("GET", url, **kwargs)

    def post(self, url: str, **kwargs: Any) -> requests.Response:
        return self.request("POST", url, **kwargs)

    def put(self, url: str, **kwargs: Any) -> requests.Response:
        return self.request("PUT", url, **kwargs)


def issuer_address(state: StateDir) -> str:
    """The address the state's issuer was started at (its tokens' ``iss`` names it)."""
    recorded = issuer_folder(state) / "address"
    return recorded.read_text().strip() if recorded.exists() else LOOPBACK


def issuer_settings(state: StateDir) -> IssuerSettings | None:
    """How the platform reaches the state's issuer (the transfer client's settings), or None when the state's
    issuer is not running (its sites then enforce no token either)."""
    port = state.read_runtime().get("ports", {}).get("issuer:https")
    if port is None or not running(state, "issuer"):
        return None
    return IssuerSettings(
        url=f"https://{issuer_address(state)}:{port}/realms/{REALM}",
        client_id=TRANSFER_CLIENT,
        client_secret=state.secret(CLIENT_SECRET),
        ca_file=str(state.path / "pki" / "certs" / "ca.pem"),
        audience_style="scope",
    )


def local_audience(endpoint_name: str) -> str:
    """The audience of a local site: its endpoint's name as a host name (the local sites share 127.0.0.1,
    and each must accept only tokens meant for it)."""
    return f"{endpoint_name.lower().replace('_', '-')}.srcnet.local"


def issuer_folder(state: StateDir) -> Path:
    return state.sub("issuer")


def ensure_issuer(
    state: StateDir, *, lifetime: int = DEFAULT_LIFETIME_SECONDS, address: str = LOOPBACK
) -> LocalIssuer:
    """Start the state's Keycloak unless it runs, and make its realm; returns how to reach it.

    ``address``: where the sites reach it, which its tokens' ``iss`` names. On loopback by default; the
    long-haul network's sites, in namespaces of their own, reach the host at its address on the network's
    host link (localnet/binding.py). An issuer running at another address is restarted at this one."""
    port = state.port("issuer:https")
    management = state.port("issuer:management")
    url = f"https://{address}:{port}/realms/{REALM}"
    ca_dir = ensure_pki(state)
    issuer = LocalIssuer(
        url=url,
        ca_file=ca_dir / "ca.pem",
        client_id=TRANSFER_CLIENT,
        client_secret=state.secret(CLIENT_SECRET),
        admin_password=state.secret(ADMIN_PASSWORD_SECRET),
        port=port,
    )
    if running(state, "issuer") and issuer_address(state) != address:
        stop_issuer(state)
    if not running(state, "issuer"):
        _start(state, issuer, management, address)
    ensure_realm(issuer, lifetime=lifetime)
    return issuer


def _start(state: StateDir, issuer: LocalIssuer, management: int, address: str) -> None:
    home = keycloak_home()
    folder = issuer_folder(state)
    for sub in ("tx", "tmp", "db"):
        (folder / sub).mkdir(exist_ok=True)
    cert, key = host_credentials(state) if address == LOOPBACK else address_credentials(state, address)
    (folder / "address").write_text(address)
    shutil.copyfile(cert, folder / "cert.pem")
    shutil.copyfile(key, folder / "key.pem")
    (folder / "key.pem").chmod(0o600)
    account = service_account(ISSUER_ACCOUNT)
    if account is not None:
        chown_tree(folder, account)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(folder),
        "KC_BOOTSTRAP_ADMIN_USERNAME": ADMIN_USER,
        "KC_BOOTSTRAP_ADMIN_PASSWORD": issuer.admin_password,
        # Keycloak sizes its heap from the machine's memory (70 % of it); a test issuer needs little.
        "JAVA_OPTS_KC_HEAP": "-Xms64m -Xmx512m",
        # Its transaction log and temporary files default to the (read-only) installation: the state's
        # instead, or each recovery module waits 10 s for a folder it cannot create.
        # -XX:TieredStopAtLevel=1: the quick JIT only. A start then costs half the CPU (5.9-6.3 s against
        # 10.8-19.1 s, and 4.6-5.0 s against 5.8-10.5 s of wall, 2026-11-28, three starts each, interleaved),
        # and a local issuer serves a few requests a second, not what the optimising JIT is for.
        "JAVA_OPTS_APPEND": (
            f"-Dquarkus.transaction-manager.object-store.directory={folder / 'tx'} "
            f"-Djava.io.tmpdir={folder / 'tmp'} -XX:TieredStopAtLevel=1"
        ),
    }
    argv = [
        str(home / "bin" / "kc.sh"),
        "start",
        "--optimized",
        "--http-enabled=false",
        # One node, no JGroups: the default (ispn) opens cluster ports on every interface and joins the
        # Keycloaks it finds, and a restarted one waits for the members its database remembers.
        "--cache=local",
        f"--https-port={issuer.port}",
        f"--https-certificate-file={folder / 'cert.pem'}",
        f"--https-certificate-key-file={folder / 'key.pem'}",
        f"--hostname=https://{address}:{issuer.port}",
        # Each token granted, refreshed and exchanged is a line of its log (Keycloak logs successes at
        # DEBUG otherwise): how an operator, and tests/longhaul/test_tokens.py, see a copy's renewals.
        "--spi-events-listener--jboss-logging--success-level=info",
        f"--http-management-port={management}",
        f"--db-url=jdbc:h2:file:{folder / 'db' / 'keycloak'};NON_KEYWORDS=VALUE",
    ]
    pid = start_daemon(state, "issuer", argv, env=env, log_name="issuer.log", cwd=folder, user=account)
    try:
        wait_for_port(issuer.port, pid=pid, what="the token issuer (Keycloak)", timeout=120)
        _wait_for_discovery(issuer, pid)
        # kc.sh runs Java as its child (it execs only to relaunch after a re-build): the server's own PID is
        # the one recorded, so that stopping the issuer stops the server and not only its launcher.
        server = _java_child(pid)
        pid_file(state, "issuer").write_text(str(server))
        (folder / "launcher.pid").write_text(str(pid))
    except ServiceError as error:
        log = state.sub("log") / "issuer.log"
        tail = " | ".join(log.read_text(errors="replace").splitlines()[-5:]) if log.exists() else ""
        raise ServiceError(f"{error}; its log ends: {tail}") from error


def _java_child(pid: int) -> int:
    """The Java process kc.sh (``pid``) started, or ``pid`` itself when it exec'd Java."""
    from .processes import child_pids

    for child in child_pids(pid):
        try:
            if Path(f"/proc/{child}/exe").resolve().name == "java":
                return int(child)
        except OSError:
            continue
    return pid


def _wait_for_discovery(issuer: LocalIssuer, pid: int, timeout: float = 120) -> None:
    from .processes import is_alive

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            answer = requests.get(
                f"{issuer.base}/realms/master/.well-known/openid-configuration",
                verify=str(issuer.ca_file),
                timeout=5,
            )
            if answer.ok:
                return
        except requests.RequestException:
            pass
        if not is_alive(pid):
            raise ServiceError("the token issuer (Keycloak) exited while starting")
        time.sleep(0.5)
    raise ServiceError(f"the token issuer (Keycloak) did not answer within {timeout:.0f} s")


def stop_issuer(state: StateDir) -> bool:
    stopped = stop_daemon(state, "issuer", timeout=30)
    # kc.sh exits with its Java child; collected here, or it stays a zombie of this process.
    launcher = issuer_folder(state) / "launcher.pid"
    if launcher.exists():
        with contextlib.suppress(ValueError):
            launcher_pid = int(launcher.read_text())
            stop_pid(launcher_pid, timeout=5)
            collect(launcher_pid)
        launcher.unlink()
    return stopped


def protocol_mapper(name: str, kind: str, **config: str) -> dict[str, Any]:
    """A protocol mapper writing into access tokens only."""
    return {
        "name": name,
        "protocol": "openid-connect",
        "protocolMapper": kind,
        "config": {
            "access.token.claim": "true",
            "id.token.claim": "false",
            "userinfo.token.claim": "false",
            **config,
        },
    }


# The transfer client's settings: refresh tokens on client credentials grants, token exchange (RFC 8693),
# and refresh tokens from an exchange (the service exchanges a submitter's managed tokens for its own and
# renews them while copies run: transfers/submitted_tokens.py).
TRANSFER_CLIENT_ATTRIBUTES = {
    "client_credentials.use_refresh_token": "true",
    "standard.token.exchange.enabled": "true",
    "standard.token.exchange.enableRefreshRequestedTokenType": "SAME_SESSION",
}


def realm_representation(client_secret: str, lifetime: int, realm: str = REALM) -> dict[str, Any]:
    """The realm, as Keycloak's admin API takes it (pure: tested alone)."""
    wlcg = {
        "name": "wlcg",
        "protocol": "openid-connect",
        "attributes": {"include.in.token.scope": "false"},
        "protocolMappers": [
            protocol_mapper(
                "wlcg.ver",
                "oidc-hardcoded-claim-mapper",
                **{"claim.name": "wlcg\\.ver", "claim.value": "1.0", "jsonType.label": "String"},
            ),
            protocol_mapper(
                "wlcg.groups",
                "oidc-group-membership-mapper",
                **{"claim.name": "wlcg\\.groups", "full.path": "true"},
            ),
            protocol_mapper("sub", "oidc-sub-mapper"),
            protocol_mapper("nbf", "script-wlcg-nbf.js", **{"claim.name": "nbf", "jsonType.label": "long"}),
        ],
    }
    storage = [
        {
            "name": scope,
            "protocol": "openid-connect",
            "attributes": {
                "is.dynamic.scope": "true",
                "dynamic.scope.regexp": f"{scope}:*",
                "include.in.token.scope": "true",
            },
        }
        for scope in STORAGE_SCOPES
    ]
    return {
        "realm": realm,
        "enabled": True,
        "accessTokenLifespan": lifetime,
        # A refresh token is used many times over a long copy (no rotation): the failure operators meet
        # with issuers that allow one use only is what the token doctor looks for.
        "revokeRefreshToken": False,
        "ssoSessionIdleTimeout": 86400,
        "ssoSessionMaxLifespan": 86400,
        "defaultDefaultClientScopes": ["wlcg"],
        "clientScopes": [wlcg, *storage],
        "groups": [{"name": VO_GROUP}],
        "clients": [
            {
                "clientId": TRANSFER_CLIENT,
                "enabled": True,
                "publicClient": False,
                "secret": client_secret,
                "serviceAccountsEnabled": True,
                "standardFlowEnabled": False,
                "directAccessGrantsEnabled": False,
                "attributes": TRANSFER_CLIENT_ATTRIBUTES,
                "defaultClientScopes": ["wlcg"],
                "optionalClientScopes": [*STORAGE_SCOPES, "offline_access"],
            }
        ],
        "users": [
            {
                "username": f"service-account-{TRANSFER_CLIENT}",
                "enabled": True,
                "serviceAccountClientId": TRANSFER_CLIENT,
                "groups": [f"/{VO_GROUP}"],
            }
        ],
    }


def ensure_realm(issuer: LocalIssuer, *, lifetime: int = DEFAULT_LIFETIME_SECONDS) -> None:
    """Create the realm once; set its token lifetime every time (a test shortens it)."""
    admin = issuer.admin_session()
    realm_url = f"{issuer.base}/admin/realms/{REALM}"
    if admin.get(realm_url, timeout=30).status_code == 404:
        answer = admin.post(
            f"{issuer.base}/admin/realms",
            json=realm_representation(issuer.client_secret, lifetime),
            timeout=60,
        )
        answer.raise_for_status()
    answer = admin.put(realm_url, json={"realm": REALM, "accessTokenLifespan": lifetime}, timeout=30)
    answer.raise_for_status()
    # A realm made by an earlier version gets the client settings of this one.
    clients_url = f"{realm_url}/clients"
    client = admin.get(clients_url, params={"clientId": TRANSFER_CLIENT}, timeout=30).json()[0]
    attributes = client.get("attributes") or {}
    if any(attributes.get(k) != v for k, v in TRANSFER_CLIENT_ATTRIBUTES.items()):
        client["attributes"] = {**attributes, **TRANSFER_CLIENT_ATTRIBUTES}
        admin.put(f"{clients_url}/{client['id']}", json=client, timeout=30).raise_for_status()


def allow_audience(
    issuer: LocalIssuer,
    audience: str,
    *,
    realm: str = REALM,
    client_ids: tuple[str, ...] = (TRANSFER_CLIENT, RUCIO_CLIENT),
) -> str:
    """Make the optional scope ``aud:<audience>`` (a token asked for with it carries that audience) and let
    each of the clients that exist ask for it; returns the scope's name. Idempotent.

    Rucio's client needs it as well, though it asks for audiences by parameter: Keycloak exchanges a token
    (the service does, for a managed submitted token) only for scopes its subject's client may have."""
    admin = issuer.admin_session()
    name = f"{AUDIENCE_SCOPE_PREFIX}{audience}"
    scopes_url = f"{issuer.base}/admin/realms/{realm}/client-scopes"
    scopes = {s["name"]: s["id"] for s in admin.get(scopes_url, timeout=30).json()}
    if name not in scopes:
        answer = admin.post(
            scopes_url,
            json={
                "name": name,
                "protocol": "openid-connect",
                "attributes": {"include.in.token.scope": "false"},
                "protocolMappers": [
                    protocol_mapper("aud", "oidc-audience-mapper", **{"included.custom.audience": audience})
                ],
            },
            timeout=30,
        )
        answer.raise_for_status()
        scopes = {s["name"]: s["id"] for s in admin.get(scopes_url, timeout=30).json()}
    for client_id in client_ids:
        clients = admin.get(f"{issuer.base}/admin/realms/{realm}/clients", params={"clientId": client_id})
        for client in clients.json():
            answer = admin.put(
                f"{issuer.base}/admin/realms/{realm}/clients/{client['id']}/optional-client-scopes/{scopes[name]}"
            )
            answer.raise_for_status()
    return name
