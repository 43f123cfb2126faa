"""manage.py check and the Celery workers refuse to start with token settings that cannot work, naming the
setting; with the real issuer and a client that has the storage scopes, they start."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import override_settings

from localnet.state import PROJECT_ROOT

from .conftest import TokenBench, token_settings

DEAD = "https://127.0.0.1:9/realms/srcnet"


@pytest.fixture
def no_storage_client(token_bench: TokenBench) -> Iterator[str]:
    """A client of the issuer that may ask for no storage scope."""
    admin, base = token_bench.issuer.admin_session(), token_bench.issuer.base
    clients = f"{base}/admin/realms/srcnet/clients"
    if not admin.get(clients, params={"clientId": "no-storage"}).json():
        admin.post(
            clients,
            json={
                "clientId": "no-storage",
                "secret": "no-storage-secret",
                "publicClient": False,
                "serviceAccountsEnabled": True,
                "standardFlowEnabled": False,
                "defaultClientScopes": ["wlcg"],
                "optionalClientScopes": [],
            },
        ).raise_for_status()
    yield "no-storage"


def _check_errors(conf: dict[str, str]) -> str:
    with override_settings(SRCNET_TOKENS=conf), pytest.raises(SystemCheckError) as raised:
        call_command("check", tags=["tokens"])
    return str(raised.value)


def test_a_healthy_issuer_and_client_pass(token_bench: TokenBench) -> None:
    with override_settings(SRCNET_TOKENS=token_settings(token_bench)):
        call_command("check", tags=["tokens"])


def test_an_issuer_that_does_not_answer_is_refused_naming_the_setting(token_bench: TokenBench) -> None:
    said = _check_errors(token_settings(token_bench, url=DEAD))
    assert "transfers.E001" in said and "SRCNET_TOKEN_ISSUER" in said


def test_a_client_the_issuer_refuses_is_refused_naming_the_setting(token_bench: TokenBench) -> None:
    said = _check_errors(token_settings(token_bench, client_secret="wrong"))
    assert "SRCNET_TOKEN_CLIENT_ID" in said and "HTTP 401" in said


def test_a_client_without_the_storage_scopes_is_refused_naming_the_setting(
    token_bench: TokenBench, no_storage_client: str
) -> None:
    said = _check_errors(
        token_settings(token_bench, client_id=no_storage_client, client_secret="no-storage-secret")
    )
    assert "SRCNET_TOKEN_CLIENT_ID" in said and "storage" in said


def test_a_worker_with_a_dead_issuer_does_not_start_and_says_which_setting(token_bench: TokenBench) -> None:
    env = {
        **os.environ,
        "SRCNET_TOKEN_ISSUER": DEAD,
        "SRCNET_TOKEN_CLIENT_ID": "srcnet-transfers",
        "SRCNET_TOKEN_CLIENT_SECRET": "x",
        "DJANGO_SETTINGS_MODULE": "srcnet.settings",
    }
    worker = subprocess.run(
        [sys.executable, "-m", "celery", "-A", "srcnet", "worker", "--pool", "solo", "--loglevel", "INFO"],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert worker.returncode != 0
    assert "the worker does not start: SRCNET_TOKEN_ISSUER" in worker.stdout + worker.stderr
