"""Single sign-on at the local token issuer: the portal's confidential client (authorization code with
PKCE), the CLI's public client (device code), the REST API's scopes, and people with passwords and groups,
as SKA-IAM would have them.

Keycloak names groups by path (``/ska/operators``) in ``wlcg.groups``, as INDIGO IAM does; the realm made
by localnet/issuer.py puts that claim in access tokens only, so the sign-on clients carry their own mappers
(ID token and userinfo too), with ``preferred_username`` and ``email``: the realm has no ``profile`` scope."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .issuer import REALM, LocalIssuer, protocol_mapper
from .state import StateDir

PORTAL_CLIENT = "srcnet-portal"
CLI_CLIENT = "srcnet-cli"
PORTAL_SECRET = "issuer-portal-client-secret"
API_SCOPES = ("srcnet.read", "srcnet.rules", "srcnet.operate")


@dataclass(frozen=True)
class SignOnClients:
    issuer: str
    ca_file: str
    portal_client: str
    portal_secret: str = field(repr=False)
    cli_client: str
    api_audience: str

    def as_setting(self) -> dict[str, str]:
        """SRCNET_SSO for the platform's settings."""
        return {
            "ISSUER": self.issuer,
            "CLIENT_ID": self.portal_client,
            "CLIENT_SECRET": self.portal_secret,
            "CA_FILE": self.ca_file,
            "SCOPES": "openid",
            "GROUPS_CLAIM": "wlcg.groups",
            "CLI_CLIENT_ID": self.cli_client,
            "NAME": "the local issuer",
        }


def _person_mappers(*, in_id_token: bool) -> list[dict[str, Any]]:
    """The person's groups (paths), user name and e-mail; in access tokens, and in ID tokens and userinfo
    too when ``in_id_token``."""
    mappers = [
        protocol_mapper(
            "wlcg.groups",
            "oidc-group-membership-mapper",
            **{"claim.name": "wlcg\\.groups", "full.path": "true"},
        ),
        protocol_mapper(
            "preferred_username",
            "oidc-usermodel-property-mapper",
            **{"user.attribute": "username", "claim.name": "preferred_username", "jsonType.label": "String"},
        ),
        protocol_mapper(
            "email",
            "oidc-usermodel-property-mapper",
            **{"user.attribute": "email", "claim.name": "email", "jsonType.label": "String"},
        ),
    ]
    if in_id_token:
        for mapper in mappers:
            mapper["config"].update({"id.token.claim": "true", "userinfo.token.claim": "true"})
    return mappers


def portal_client_representation(secret: str, redirect_uris: list[str]) -> dict[str, Any]:
    """The portal's client (pure: tested alone): confidential, code flow only, PKCE S256 required."""
    return {
        "clientId": PORTAL_CLIENT,
        "enabled": True,
        "publicClient": False,
        "secret": secret,
        "standardFlowEnabled": True,
        "directAccessGrantsEnabled": False,
        "serviceAccountsEnabled": False,
        "implicitFlowEnabled": False,
        "redirectUris": redirect_uris,
        "attributes": {"pkce.code.challenge.method": "S256"},
        "defaultClientScopes": ["wlcg"],
        "protocolMappers": _person_mappers(in_id_token=True),
    }


def cli_client_representation(api_audience: str) -> dict[str, Any]:
    """The CLI's client (pure): public, device code only, its access tokens for the REST API's audience."""
    return {
        "clientId": CLI_CLIENT,
        "enabled": True,
        "publicClient": True,
        "standardFlowEnabled": False,
        "directAccessGrantsEnabled": False,
        "attributes": {"oauth2.device.authorization.grant.enabled": "true"},
        "defaultClientScopes": ["wlcg"],
        "optionalClientScopes": [*API_SCOPES, "offline_access"],
        "protocolMappers": [
            # wlcg.groups is the realm's default scope's already (access tokens): the name and e-mail only.
            *_person_mappers(in_id_token=False)[1:],
            protocol_mapper(
                "api audience", "oidc-audience-mapper", **{"included.custom.audience": api_audience}
            ),
        ],
    }


def _api_scope(name: str) -> dict[str, Any]:
    return {"name": name, "protocol": "openid-connect", "attributes": {"include.in.token.scope": "true"}}


def ensure_sign_on(
    state: StateDir, issuer: LocalIssuer, *, redirect_uris: list[str], api_audience: str
) -> SignOnClients:
    """The REST API's scopes and both clients (made once; the portal's redirect URIs and the CLI's audience
    brought up to date every time). Idempotent."""
    admin = issuer.admin_session()
    realm = f"{issuer.base}/admin/realms/{REALM}"
    scopes = {s["name"] for s in admin.get(f"{realm}/client-scopes", timeout=30).json()}
    for name in API_SCOPES:
        if name not in scopes:
            admin.post(f"{realm}/client-scopes", json=_api_scope(name), timeout=30).raise_for_status()
    secret = state.secret(PORTAL_SECRET)
    for wanted in (
        portal_client_representation(secret, redirect_uris),
        cli_client_representation(api_audience),
    ):
        found = admin.get(f"{realm}/clients", params={"clientId": wanted["clientId"]}, timeout=30).json()
        if not found:
            admin.post(f"{realm}/clients", json=wanted, timeout=30).raise_for_status()
            continue
        client = found[0]
        if wanted["clientId"] == PORTAL_CLIENT:
            wanted["redirectUris"] = sorted({*client.get("redirectUris", []), *redirect_uris})
        update = {**client, **{k: v for k, v in wanted.items() if k != "protocolMappers"}}
        admin.put(f"{realm}/clients/{client['id']}", json=update, timeout=30).raise_for_status()
        if wanted["clientId"] == CLI_CLIENT:
            _set_audience(admin, f"{realm}/clients/{client['id']}", api_audience)
    return SignOnClients(
        issuer=issuer.url,
        ca_file=str(issuer.ca_file),
        portal_client=PORTAL_CLIENT,
        portal_secret=secret,
        cli_client=CLI_CLIENT,
        api_audience=api_audience,
    )


def _set_audience(admin: Any, client_url: str, audience: str) -> None:
    for mapper in admin.get(f"{client_url}/protocol-mappers/models", timeout=30).json():
        if mapper["name"] == "api audience" and mapper["config"].get("included.custom.audience") != audience:
            mapper["config"]["included.custom.audience"] = audience
            admin.put(
                f"{client_url}/protocol-mappers/models/{mapper['id']}", json=mapper, timeout=30
            ).raise_for_status()


def ensure_person(
    issuer: LocalIssuer, username: str, password: str, groups: list[str], email: str = ""
) -> str:
    """A person of the realm with a password and exactly ``groups`` (paths such as ``/ska/operators``, made
    if missing); returns their subject (``sub``)."""
    admin = issuer.admin_session()
    realm = f"{issuer.base}/admin/realms/{REALM}"
    found = admin.get(f"{realm}/users", params={"username": username, "exact": "true"}, timeout=30).json()
    if not found:
        person = {
            "username": username,
            "enabled": True,
            "email": email or f"{username}@example.org",
            "emailVerified": True,
            "firstName": username,
            "lastName": "Example",
            "requiredActions": [],
            "credentials": [{"type": "password", "value": password, "temporary": False}],
        }
        admin.post(f"{realm}/users", json=person, timeout=30).raise_for_status()
        found = admin.get(f"{realm}/users", params={"username": username, "exact": "true"}, timeout=30).json()
    subject = str(found[0]["id"])
    user_url = f"{realm}/users/{subject}"
    admin.put(
        f"{user_url}/reset-password",
        json={"type": "password", "value": password, "temporary": False},
        timeout=30,
    ).raise_for_status()
    current = {g["path"]: g["id"] for g in admin.get(f"{user_url}/groups", timeout=30).json()}
    for path in groups:
        if path not in current:
            admin.put(f"{user_url}/groups/{_group_id(admin, realm, path)}", timeout=30).raise_for_status()
    for path, group_id in current.items():
        if path not in groups:
            admin.request("DELETE", f"{user_url}/groups/{group_id}", timeout=30).raise_for_status()
    return subject


def _group_id(admin: Any, realm: str, path: str) -> str:
    """The id of the group at ``path``, made (with its parents) if missing."""
    answer = admin.get(f"{realm}/group-by-path/{path.lstrip('/')}", timeout=30)
    if answer.status_code == 200:
        return str(answer.json()["id"])
    parent, _, name = path.rstrip("/").rpartition("/")
    url = f"{realm}/groups/{_group_id(admin, realm, parent)}/children" if parent else f"{realm}/groups"
    admin.post(url, json={"name": name}, timeout=30).raise_for_status()
    return str(admin.get(f"{realm}/group-by-path/{path.lstrip('/')}", timeout=30).json()["id"])


SIGN_ON_RECORD = "issuer-sign-on.json"
# The person the demo offers at its issuer (a scientist of the VO), and the admin's mappings it starts with.
DEMO_PERSON = ("alice", "alice-signs-on")
DEMO_MAPPINGS = (("/ska", "scientist"), ("/ska/operators", "operator"))


def offer_sign_on(state: StateDir, issuer: LocalIssuer, web_base: str) -> SignOnClients:
    """Single sign-on for the state's own web server (the demo's): both clients for its URLs, recorded so
    the web server started after it is configured for them (``sign_on_env``)."""
    host_alias = web_base.replace("://127.0.0.1:", "://localhost:")
    clients = ensure_sign_on(
        state,
        issuer,
        redirect_uris=[f"{web_base}/sso/callback/", f"{host_alias}/sso/callback/"],
        api_audience=web_base,
    )
    record = {"issuer": clients.issuer, "ca_file": clients.ca_file, "api_audience": web_base}
    (state.path / SIGN_ON_RECORD).write_text(json.dumps(record))
    return clients


def sign_on_env(state: StateDir) -> dict[str, str]:
    """SRCNET_SSO_* and SRCNET_API_TOKEN_AUDIENCES for the platform's processes, once ``offer_sign_on`` ran
    for the state; nothing before (its web server then takes local passwords from everyone)."""
    try:
        record = json.loads((state.path / SIGN_ON_RECORD).read_text())
    except (OSError, ValueError):
        return {}
    conf = SignOnClients(
        issuer=str(record["issuer"]),
        ca_file=str(record["ca_file"]),
        portal_client=PORTAL_CLIENT,
        portal_secret=state.secret(PORTAL_SECRET),
        cli_client=CLI_CLIENT,
        api_audience=str(record["api_audience"]),
    ).as_setting()
    env = {f"SRCNET_SSO_{key}": value for key, value in conf.items()}
    env["SRCNET_API_TOKEN_AUDIENCES"] = str(record["api_audience"])
    return env
