"""The Ansible token_issuer role makes the same realm as the local network's issuer (localnet/issuer.py):
its realm template, Rucio's client (localnet/issuer_rucio.py), the sign-on clients and the REST API's scopes
(localnet/issuer_sso.py), client settings, Keycloak release and build options are compared with the Python
ones, so that a deployed issuer and the one every test runs against
cannot drift apart."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jinja2
import yaml

from localnet.issuer import (
    KEYCLOAK_VERSION,
    REALM,
    RUCIO_CLIENT,
    TRANSFER_CLIENT,
    TRANSFER_CLIENT_ATTRIBUTES,
    VO_GROUP,
    realm_representation,
)
from localnet.issuer_rucio import rucio_client_representation
from localnet.issuer_sso import (
    API_SCOPES,
    CLI_CLIENT,
    PORTAL_CLIENT,
    cli_client_representation,
    portal_client_representation,
)
from localnet.state import PROJECT_ROOT

ROLE = PROJECT_ROOT / "ansible" / "roles" / "token_issuer"
INSTALL_SCRIPT = PROJECT_ROOT / "scripts" / "install-keycloak.sh"


def _defaults() -> dict[str, Any]:
    return yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())


def _render(template_name: str = "realm.json.j2", **variables: Any) -> dict[str, Any]:
    """A template of the role rendered with Ansible's two filters it uses (to_json, combine)."""
    environment = jinja2.Environment(undefined=jinja2.StrictUndefined)
    environment.filters["to_json"] = json.dumps
    environment.filters["combine"] = lambda first, second: {**first, **second}
    template = environment.from_string((ROLE / "templates" / template_name).read_text())
    return json.loads(template.render(**variables))


def test_the_roles_realm_is_the_local_issuers_realm() -> None:
    defaults = _defaults()
    rendered = _render(
        token_issuer_realm=defaults["token_issuer_realm"],
        token_issuer_token_lifetime=900,
        token_issuer_vo_group=defaults["token_issuer_vo_group"],
        token_issuer_client_id=defaults["token_issuer_client_id"],
        token_issuer_client_secret="s3cret-value",
        token_issuer_client_attributes=defaults["token_issuer_client_attributes"],
    )
    assert rendered == realm_representation("s3cret-value", 900)


def test_the_roles_rucio_client_is_the_local_rucios_client() -> None:
    defaults = _defaults()
    rendered = _render(
        "rucio_client.json.j2",
        token_issuer_rucio_client_id=defaults["token_issuer_rucio_client_id"],
        token_issuer_rucio_client_secret="r-s3cret",
        token_issuer_client_id=defaults["token_issuer_client_id"],
    )
    assert rendered == rucio_client_representation("r-s3cret")
    assert defaults["token_issuer_rucio_client_id"] == RUCIO_CLIENT
    assert defaults["token_issuer_rucio_client_secret"] == ""  # no client for Rucio unless asked for


def test_the_roles_sign_on_clients_are_the_local_issuers() -> None:
    defaults = _defaults()
    uris = ["https://cp1.example.org:8000/sso/callback/", "https://10.0.0.5:8000/sso/callback/"]
    portal = _render(
        "sso_portal_client.json.j2",
        token_issuer_sso_portal_client_id=defaults["token_issuer_sso_portal_client_id"],
        token_issuer_sso_portal_client_secret="p-s3cret",
        token_issuer_sso_redirect_uris=uris,
    )
    assert portal == portal_client_representation("p-s3cret", uris)
    cli = _render(
        "sso_cli_client.json.j2",
        token_issuer_sso_cli_client_id=defaults["token_issuer_sso_cli_client_id"],
        token_issuer_sso_api_scopes=defaults["token_issuer_sso_api_scopes"],
        token_issuer_sso_api_audience="https://cp1.example.org:8000",
    )
    assert cli == cli_client_representation("https://cp1.example.org:8000")
    assert defaults["token_issuer_sso_portal_client_id"] == PORTAL_CLIENT
    assert defaults["token_issuer_sso_cli_client_id"] == CLI_CLIENT
    assert tuple(defaults["token_issuer_sso_api_scopes"]) == API_SCOPES
    assert defaults["token_issuer_sso_portal_client_secret"] == ""  # no sign-on clients unless asked for


def test_the_sign_on_client_ids_are_the_applications_defaults() -> None:
    """The srcnet_app role names the same clients the token_issuer role makes."""
    app_defaults = PROJECT_ROOT / "ansible" / "roles" / "srcnet_app" / "defaults" / "main.yml"
    app = yaml.safe_load(app_defaults.read_text())
    defaults = _defaults()
    assert app["srcnet_app_sso_client_id"] == defaults["token_issuer_sso_portal_client_id"]
    assert app["srcnet_app_sso_cli_client_id"] == defaults["token_issuer_sso_cli_client_id"]
    assert app["srcnet_app_sso_issuer"] == ""  # no sign-on unless asked for


def test_a_secret_with_json_characters_stays_a_string() -> None:
    defaults = _defaults()
    variables = {k: v for k, v in defaults.items() if k.startswith("token_issuer_")}
    rendered = _render(**{**variables, "token_issuer_client_secret": 'a"b\\c'})
    assert rendered["clients"][0]["secret"] == 'a"b\\c'


def test_the_roles_defaults_name_the_local_issuers_client_realm_and_group() -> None:
    defaults = _defaults()
    assert defaults["token_issuer_realm"] == REALM
    assert defaults["token_issuer_client_id"] == TRANSFER_CLIENT
    assert defaults["token_issuer_vo_group"] == VO_GROUP
    assert defaults["token_issuer_client_attributes"] == TRANSFER_CLIENT_ATTRIBUTES


def _script_value(name: str) -> str:
    match = re.search(rf"^{name}=(.*)$", INSTALL_SCRIPT.read_text(), re.M)
    assert match, name
    return match.group(1)


def test_the_role_installs_and_builds_keycloak_as_the_bootstrap_does() -> None:
    defaults = _defaults()
    assert defaults["token_issuer_keycloak_version"] == KEYCLOAK_VERSION == _script_value("version")
    assert defaults["token_issuer_keycloak_sha512"] == _script_value("sha512")
    options = _script_value("build_options").strip("()").split()
    assert defaults["token_issuer_build_options"].split() == options


def test_the_role_ships_the_local_issuers_claim_mappers() -> None:
    for name in ("keycloak-scripts.json", "wlcg-nbf.js", "wlcg-audience.js"):
        shipped = ROLE / "files" / name
        assert shipped.resolve() == (PROJECT_ROOT / "localnet" / "keycloak" / name).resolve()
        assert Path(shipped).read_text()
