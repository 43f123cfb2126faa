"""``srcnet auth login``: the CLI signs on with the device code flow at the real local issuer, keeps the
refresh token 0600, renews its access token by itself, and signs off (revoked at the issuer)."""

from __future__ import annotations

import io
import json
import re
import stat
import threading
import time
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from cli.exit_codes import ExitCode
from cli.main import main
from identity.models import GroupMapping, MappedRole
from localnet.issuer_sso import ensure_sign_on

from .sign_on import approve_device
from .test_single_sign_on import AUDIENCE, CALLBACK, VO, browser_for, person

pytestmark = pytest.mark.django_db(transaction=True)


class Watched(io.StringIO):
    """A stderr another thread reads while the CLI writes it."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()

    def write(self, text: str) -> int:
        with self.lock:
            return super().write(text)

    def text(self) -> str:
        with self.lock:
            return self.getvalue()


@pytest.fixture
def sign_on(settings, token_issuer, test_state, live_server):  # type: ignore[no-untyped-def]
    clients = ensure_sign_on(test_state, token_issuer, redirect_uris=[CALLBACK], api_audience=AUDIENCE)
    settings.SRCNET_SSO = clients.as_setting()
    settings.SRCNET_API_TOKEN_AUDIENCES = [AUDIENCE]
    GroupMapping.objects.create(group=VO, role=MappedRole.SCIENTIST)
    return clients


def cli(env: dict[str, str], *argv: str, stderr: io.StringIO | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), stderr if stderr is not None else io.StringIO()
    code = main(list(argv), env=env, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_the_cli_signs_on_keeps_its_refresh_token_private_and_signs_off(
    sign_on, token_issuer, live_server, tmp_path: Path
):
    name, password, _ = person(token_issuer, VO)
    folder = tmp_path / "config"
    env = {
        "SRCNET_URL": live_server.url,
        "SRCNET_CONFIG_DIR": str(folder),
        "SRCNET_CA_BUNDLE": str(token_issuer.ca_file),
    }
    stderr = Watched()
    outcome: dict[str, int] = {}
    login = threading.Thread(
        target=lambda: outcome.update(code=cli(env, "auth", "login", "--scope", "rules", stderr=stderr)[0])
    )
    login.start()
    try:
        deadline = time.monotonic() + 60
        while not (shown := re.search(r"open (https://\S+)", stderr.text())) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert shown, stderr.text()
        assert "Device Login Successful" in approve_device(
            browser_for(token_issuer), shown.group(1), name, password
        )
    finally:
        login.join(timeout=90)
    assert outcome.get("code") == ExitCode.OK, stderr.text()
    assert f"signed on as {name} (scientist)" in stderr.text()
    kept = folder / "credentials.json"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600 and stat.S_IMODE(folder.stat().st_mode) == 0o700
    entry = json.loads(kept.read_text())[live_server.url]
    assert entry["refresh_token"] and "srcnet.rules" in entry["scope"]

    # Without any token, the CLI is that person, within the scope it asked for.
    code, out, err = cli(env, "auth", "status", "-o", "json")
    assert code == ExitCode.OK and json.loads(out)["user"] == name, err
    assert get_user_model().objects.get(username=name).projects.count() == 0
    # An access token about to expire is renewed with the refresh token, by itself.
    entry["expires_at"] = 0
    kept.write_text(json.dumps({live_server.url: entry}))
    code, out, err = cli(env, "auth", "status", "-o", "json")
    renewed = json.loads(kept.read_text())[live_server.url]
    assert code == ExitCode.OK and renewed["access_token"] != entry["access_token"], err
    assert renewed["expires_at"] > time.time() + 60

    # A file others may read is refused, as ssh refuses a key.
    kept.chmod(0o644)
    code, _, err = cli(env, "auth", "status")
    assert code == ExitCode.AUTH and "chmod 600" in err
    kept.chmod(0o600)

    # Signing off forgets it here and revokes it at the issuer: the old refresh token renews nothing.
    code, _, err = cli(env, "auth", "logout")
    assert code == ExitCode.OK and "revoked at the issuer" in err, err
    assert json.loads(kept.read_text()) == {}
    code, _, err = cli(env, "auth", "status")
    assert code == ExitCode.AUTH
    kept.write_text(json.dumps({live_server.url: {**renewed, "expires_at": 0}}))
    code, _, err = cli(env, "auth", "status")
    assert code == ExitCode.AUTH and "run `srcnet auth login`" in err


def test_a_server_without_sign_on_says_to_use_a_token(live_server, tmp_path: Path):
    env = {"SRCNET_URL": live_server.url, "SRCNET_CONFIG_DIR": str(tmp_path)}
    code, _, err = cli(env, "auth", "login")
    assert code == ExitCode.NOT_FOUND and "offers no single sign-on" in err
