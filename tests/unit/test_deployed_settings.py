"""A deployment's settings (SRCNET_DEPLOYED=1, set by the Ansible role srcnet_app): HTTPS only, HSTS, secure
cookies, DEBUG off, `check --deploy` clean, and no start at all without the vault's SECRET_KEY. Each case is
a fresh process, as the web server and the workers read their settings once."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

from localnet.state import PROJECT_ROOT

SHOW_AND_CHECK = """
import json, django
django.setup()
from django.conf import settings
from django.core.management import call_command
names = ["DEBUG", "SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS", "SECURE_HSTS_INCLUDE_SUBDOMAINS",
         "SECURE_CONTENT_TYPE_NOSNIFF", "SECURE_REFERRER_POLICY", "SESSION_COOKIE_SECURE",
         "CSRF_COOKIE_SECURE", "CSRF_TRUSTED_ORIGINS", "SECRET_KEY"]
print(json.dumps({name: getattr(settings, name) for name in names}))
call_command("check", deploy=True, fail_level="WARNING")
"""


def _process(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("SRCNET_")}
    base.update(
        {
            "DJANGO_SETTINGS_MODULE": "srcnet.settings",
            # No local network's key to fall back on.
            "SRCNET_STATE_ROOT": str(tmp_path),
            "SRCNET_STATE": "deployed",
            **env,
        }
    )
    return subprocess.run(
        [sys.executable, "-c", SHOW_AND_CHECK],
        env=base,
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_deployment_without_its_secret_key_refuses_to_start(tmp_path: Path) -> None:
    run = _process(tmp_path, SRCNET_DEPLOYED="1")
    assert run.returncode != 0
    assert "ImproperlyConfigured: SRCNET_SECRET_KEY is not set: a deployment (SRCNET_DEPLOYED=1)" in (
        run.stderr
    )
    # An empty value is no key either.
    empty = _process(tmp_path, SRCNET_DEPLOYED="1", SRCNET_SECRET_KEY="")
    assert empty.returncode != 0 and "SRCNET_SECRET_KEY is not set" in empty.stderr


def test_a_deployment_is_https_only_and_check_deploy_is_clean(tmp_path: Path) -> None:
    key = secrets.token_urlsafe(48)
    origin = "https://cp1.example.org:8000"
    run = _process(
        tmp_path,
        SRCNET_DEPLOYED="1",
        SRCNET_SECRET_KEY=key,
        SRCNET_DEBUG="1",
        SRCNET_CSRF_TRUSTED_ORIGINS=origin,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    values = json.loads(run.stdout.splitlines()[0])
    assert values == {
        "DEBUG": False,  # even when asked for
        "SECURE_SSL_REDIRECT": True,
        "SECURE_HSTS_SECONDS": 31_536_000,
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": True,
        "SECURE_CONTENT_TYPE_NOSNIFF": True,
        "SECURE_REFERRER_POLICY": "same-origin",
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,
        "CSRF_TRUSTED_ORIGINS": [origin],
        "SECRET_KEY": key,
    }
    assert "System check identified no issues" in run.stdout, run.stdout


def test_outside_a_deployment_the_random_key_and_plain_settings_remain(tmp_path: Path) -> None:
    run = _process(tmp_path)
    # check --deploy warns here (no HSTS, no secure cookies): only the values are asked for.
    values = json.loads(run.stdout.splitlines()[0])
    assert len(values["SECRET_KEY"]) >= 50
    assert not values["SESSION_COOKIE_SECURE"] and not values["SECURE_SSL_REDIRECT"]
    assert values["SECURE_HSTS_SECONDS"] == 0
