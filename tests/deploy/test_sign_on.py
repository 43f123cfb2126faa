"""Single sign-on in the Ansible deployment (issue 31): the srcnet_app role turns it on, the token_issuer role
makes the portal's and the CLI's clients at the deployed Keycloak. On the booted hosts, over HTTPS with the
deployment's CA: the control plane names the deployed issuer and the CLI's client; a person made at the
issuer, in a group an admin's mapping (made with srcnet-manage on cp) maps to operator, signs on through the
portal (authorization code with PKCE, a browser from the hosts' network, tests/deploy/lan_browser.py) and is
an operator in that session; and `srcnet auth login`, run on the controller in the hosts' network, completes
the device code flow at the deployed issuer, after which `srcnet auth status` names the person."""

from __future__ import annotations

import json
import os
import re
import secrets
import stat
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest

from localnet.state import PROJECT_ROOT

from .conftest import CONTROL_PLANE_HOST, DEPLOY_TIMEOUT, SSO_CLI_CLIENT, SSO_NAME, Deployment

pytestmark = DEPLOY_TIMEOUT

OPERATORS = "/ska/operators"
CLI = PROJECT_ROOT / ".venv" / "bin" / "srcnet"
PYTHON = PROJECT_ROOT / ".venv" / "bin" / "python"


def in_lan(
    deployment: Deployment, argv: list[str], *, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``argv`` on the controller, in the hosts' network (their addresses are reachable only there)."""
    return subprocess.run(
        ["ip", "netns", "exec", deployment.fleet.lan, *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=PROJECT_ROOT,
        check=False,
    )


def cli_env(deployment: Deployment, config: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SRCNET_")}
    env.update(
        SRCNET_URL=deployment.web, SRCNET_CA_BUNDLE=str(deployment.ca_file), SRCNET_CONFIG_DIR=str(config)
    )
    return env


@pytest.fixture(scope="module")
def person(deployment: Deployment, deployed: object) -> tuple[str, str]:
    """A person of the deployed realm with a password, in /ska/operators (made through the issuer's admin
    API), and the admin's mapping of that group to the operator role (made on cp)."""
    name, password = f"sso-{uuid.uuid4().hex[:8]}", secrets.token_urlsafe(18)
    admin = deployment.issuer_admin
    vo = json.loads(admin("GET", "/group-by-path/ska"))
    if not any(g["name"] == "operators" for g in json.loads(admin("GET", f"/groups/{vo['id']}/children"))):
        admin("POST", f"/groups/{vo['id']}/children", {"name": "operators"})
    group = json.loads(admin("GET", "/group-by-path/ska/operators"))
    admin(
        "POST",
        "/users",
        {
            "username": name,
            "enabled": True,
            "email": f"{name}@example.org",
            "emailVerified": True,
            "firstName": name,
            "lastName": "Example",
            "requiredActions": [],
            "credentials": [{"type": "password", "value": password, "temporary": False}],
        },
    )
    subject = json.loads(admin("GET", f"/users?username={name}&exact=true"))[0]["id"]
    admin("PUT", f"/users/{subject}/groups/{group['id']}")
    deployment.ssh(
        CONTROL_PLANE_HOST,
        ["srcnet-manage", "shell", "-c",
         "from identity.models import GroupMapping; "
         f"GroupMapping.objects.get_or_create(group='{OPERATORS}', defaults={{'role': 'operator'}})"],
    )  # fmt: skip
    return name, password


def test_the_control_plane_names_the_deployed_issuer_for_sign_on(
    deployment: Deployment, deployed: object
) -> None:
    answer = json.loads(deployment.curl("--fail", f"{deployment.web}/api/identity/sign-on/").stdout)
    assert answer == {
        "issuer": deployment.issuer,
        "cli_client_id": SSO_CLI_CLIENT,
        "audience": deployment.web,
        "scopes": ["srcnet.read", "srcnet.rules", "srcnet.operate"],
    }, answer
    # The portal's sign-in page offers the issuer by the inventory's name (a value with spaces, read from the
    # environment file by systemd as the role wrote it).
    page = deployment.curl("--fail", f"{deployment.web}/login/").stdout
    assert f"Sign in with {SSO_NAME}" in page, page[:2000]


def test_a_person_of_a_mapped_group_signs_on_through_the_portal_as_an_operator(
    deployment: Deployment, person: tuple[str, str]
) -> None:
    name, password = person
    started = in_lan(
        deployment,
        [str(PYTHON), "-m", "tests.deploy.lan_browser", "portal", deployment.web, str(deployment.ca_file),
         name, password],
    )  # fmt: skip
    assert started.returncode == 0, started.stdout + started.stderr
    seen = json.loads(started.stdout)
    callback = f"{deployment.web}/sso/callback/"
    assert seen["login_status"] == 302 and str(seen["to_issuer"]).startswith(deployment.issuer + "/"), seen
    asked = seen["asked"]
    assert asked["client_id"] == "srcnet-portal" and asked["redirect_uri"] == callback, asked
    assert asked["code_challenge_method"] == "S256" and asked["response_type"] == "code", asked
    # The issuer took the person's password and sent the browser back to the portal with a code.
    assert seen["issuer_status"] == 302 and str(seen["to_callback"]).startswith(callback + "?"), seen
    assert seen["callback_status"] == 302 and seen["landed"] == "/rules/", seen
    assert seen["api_status"] == 200, seen
    assert (seen["api"]["user"], seen["api"]["role"]) == (name, "operator"), seen  # type: ignore[index]
    account = deployment.ssh(
        CONTROL_PLANE_HOST,
        ["srcnet-manage", "shell", "-c",
         "from django.contrib.auth import get_user_model; "
         f"u = get_user_model().objects.get(username='{name}'); "
         "print(u.is_staff, u.is_superuser, u.has_usable_password())"],
    ).stdout.split()  # fmt: skip
    assert account[-3:] == ["True", "False", "False"], account


def test_the_cli_signs_on_with_the_device_code_from_the_controller(
    deployment: Deployment, person: tuple[str, str], tmp_path: Path
) -> None:
    name, password = person
    config = tmp_path / "config"
    env = cli_env(deployment, config)
    login = subprocess.Popen(
        ["ip", "netns", "exec", deployment.fleet.lan, str(CLI), "auth", "login"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=PROJECT_ROOT,
    )
    said: list[str] = []
    reader = threading.Thread(target=lambda: said.extend(iter(login.stderr.readline, "")), daemon=True)  # type: ignore[union-attr]
    reader.start()
    try:
        deadline = time.monotonic() + 60
        while not (shown := re.search(r"open (https://\S+)", "".join(said))) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert shown, "".join(said)
        assert shown.group(1).startswith(deployment.issuer + "/"), shown.group(1)
        approved = in_lan(
            deployment,
            [str(PYTHON), "-m", "tests.deploy.lan_browser", "approve", shown.group(1),
             str(deployment.ca_file), name, password],
        )  # fmt: skip
        assert approved.returncode == 0 and "Device Login Successful" in approved.stdout, (
            approved.stdout[-2000:] + approved.stderr
        )
        code = login.wait(timeout=90)
    finally:
        if login.poll() is None:
            login.kill()
            login.wait()
        reader.join(timeout=10)
    assert code == 0, "".join(said)
    assert f"signed on as {name} (operator)" in "".join(said), "".join(said)
    kept = config / "credentials.json"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600 and stat.S_IMODE(config.stat().st_mode) == 0o700
    entry = json.loads(kept.read_text())[deployment.web]
    assert entry["issuer"] == deployment.issuer and entry["refresh_token"], sorted(entry)

    status = in_lan(deployment, [str(CLI), "auth", "status", "-o", "json"], env=env)
    assert status.returncode == 0, status.stdout + status.stderr
    me = json.loads(status.stdout)
    assert (me["user"], me["role"]) == (name, "operator") and "sign-on" in me["by"], me


def test_with_sign_on_a_local_password_signs_in_an_admin_only(
    deployment: Deployment, deployed: object
) -> None:
    """The same local password is refused to an account that is not an admin (portal and POST /api/token/),
    and taken once the account is a superuser (the bootstrap admin's way in)."""
    password = secrets.token_urlsafe(18)

    def make(superuser: bool) -> None:
        deployment.ssh(
            CONTROL_PLANE_HOST,
            ["srcnet-manage", "shell", "-c",
             "from django.contrib.auth import get_user_model; "
             "u, _ = get_user_model().objects.get_or_create(username='local-person'); "
             f"u.is_staff = u.is_superuser = {superuser}; u.set_password('{password}'); u.save()"],
        )  # fmt: skip

    def sign_in() -> tuple[str, str]:
        jar = deployment.fleet.workdir / f"local-person-{uuid.uuid4().hex[:6]}"
        login = f"{deployment.web}/login/"
        deployment.curl("--fail", "-c", str(jar), "-o", "/dev/null", login)
        csrf = next(
            line.split("\t")[6]
            for line in jar.read_text().splitlines()
            if line.count("\t") == 6 and "\tcsrftoken\t" in line
        )
        portal = deployment.curl(
            "-b", str(jar), "-c", str(jar), "-o", "/dev/null", "-w", "%{http_code}", "--referer", login,
            "--data-urlencode", f"csrfmiddlewaretoken={csrf}", "--data-urlencode", "username=local-person",
            "--data-urlencode", f"password={password}", login,
        ).stdout  # fmt: skip
        api = deployment.curl(
            "-o", "/dev/null", "-w", "%{http_code}", "--data-urlencode", "username=local-person",
            "--data-urlencode", f"password={password}", f"{deployment.web}/api/token/",
        ).stdout  # fmt: skip
        return portal, api

    make(superuser=False)
    assert sign_in() == ("200", "400")  # the form again; no token
    make(superuser=True)
    assert sign_in() == ("302", "201")
