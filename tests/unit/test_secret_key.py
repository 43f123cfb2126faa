"""Django's SECRET_KEY is never a value anyone could know: from the environment, else the local network's
own random key (made once, readable by its owner only, handed to the platform's processes), else a random
key for the process alone."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from localnet.stack import service_env
from localnet.state import DJANGO_SECRET_KEY, PROJECT_ROOT, StateDir

PRINT_KEY = "import django; django.setup(); from django.conf import settings; print(settings.SECRET_KEY)"


def _key_of_a_process(env: dict[str, str]) -> str:
    run = subprocess.run(
        [sys.executable, "-c", PRINT_KEY],
        env=env,
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return run.stdout.strip()


def _bare_env(state_root: Path, state: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "SRCNET_SECRET_KEY"}
    env.update(
        {
            "SRCNET_STATE_ROOT": str(state_root),
            "SRCNET_STATE": state,
            "DJANGO_SETTINGS_MODULE": "srcnet.settings",
        }
    )
    return env


def test_without_a_key_anywhere_each_process_draws_its_own(tmp_path: Path) -> None:
    env = _bare_env(tmp_path, "no-such-state")
    first, second = _key_of_a_process(env), _key_of_a_process(env)
    assert len(first) >= 50 and first != second
    assert str(PROJECT_ROOT) not in first and "not-secret" not in first


def test_a_local_network_has_one_random_key_its_processes_share(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("SRCNET_STATE_ROOT", str(tmp_path))
    monkeypatch.delenv("SRCNET_SECRET_KEY", raising=False)
    state = StateDir.named("keyed")
    key = state.secret(DJANGO_SECRET_KEY)
    assert state.secret(DJANGO_SECRET_KEY) == key and len(key) >= 50  # made once
    secret_file = state.path / "secrets" / DJANGO_SECRET_KEY
    assert stat.S_IMODE(secret_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(secret_file.parent.stat().st_mode) == 0o700
    # A process of the state reads it (the tests, manage.py), a platform process gets it in its environment.
    assert _key_of_a_process(_bare_env(tmp_path, "keyed")) == key
    assert service_env(state, "keyed")["SRCNET_SECRET_KEY"] == key
    # Another state has another key; the environment (a deployment's vault) wins over both.
    assert StateDir.named("other").secret(DJANGO_SECRET_KEY) != key
    assert _key_of_a_process({**_bare_env(tmp_path, "keyed"), "SRCNET_SECRET_KEY": "from-the-vault"}) == (
        "from-the-vault"
    )
