"""The FTS3 endpoint takes a token issuer's JWT as a credential, as Rucio's conveyor presents one for RSEs
with ``oidc_support`` (``request_token(audience=<FTS3 host>, scope='fts')``): signed by a trusted issuer,
within its lifetime, for this endpoint's audience, granting ``fts``, its subject registered. Anything else
is refused with the reason, and the real ``fts3`` client works with an accepted one."""

from __future__ import annotations

import pytest
import requests
from fts3.rest.client import easy
from fts3.rest.client.context import Context

from localnet.issuer_rucio import RucioClient
from tests.forgeries import KINDS, forge, stranger_token

from .conftest import TokenBench, rucio_style_token, token_settings

AUDIENCE = "127.0.0.1"


@pytest.fixture
def fts_url(live_server, token_bench: TokenBench, settings) -> str:  # type: ignore[no-untyped-def]
    settings.SRCNET_TOKENS = token_settings(token_bench)
    settings.SRCNET_FTS3_TOKEN_AUDIENCES = [AUDIENCE]
    return f"{live_server.url}/fts3"


@pytest.fixture
def conveyor(transactional_db, rucio_client: RucioClient):  # type: ignore[no-untyped-def]
    """The conveyor's account, its issuer subject registered as ``manage.py fts3_identity --issuer`` does."""
    from django.contrib.auth.models import User
    from django.core.management import call_command

    user = User.objects.create_user("rucio-conveyor")
    call_command(
        "fts3_identity", rucio_client.subject, user.username, "--issuer", rucio_client.issuer, "--submitter"
    )
    return user


def _whoami(url: str, token: str) -> requests.Response:
    return requests.get(f"{url}/whoami", headers={"Authorization": f"Bearer {token}"}, timeout=30)


def _fts_token(bench: TokenBench, client: RucioClient, audience: str = AUDIENCE, scope: str = "fts") -> str:
    return rucio_style_token(bench, client, audience=audience, scope=scope)


def test_the_conveyors_issuer_token_is_its_credential(
    token_bench: TokenBench, rucio_client: RucioClient, fts_url: str, conveyor
) -> None:  # type: ignore[no-untyped-def]
    token = _fts_token(token_bench, rucio_client)
    answer = _whoami(fts_url, token)
    assert answer.status_code == 200, answer.text
    assert answer.json()["method"] == "oauth2" and answer.json()["user_dn"] == rucio_client.subject
    # The real fts3 client, as Rucio's transfertool's requests would: the same credential.
    context = Context(fts_url, fts_access_token=token, verify=False)
    assert easy.whoami(context)["user_dn"] == rucio_client.subject
    assert easy.list_jobs(context) == []


@pytest.mark.parametrize(
    "case, status, reason",
    [
        ("no fts scope", 403, "does not grant the 'fts' scope"),
        ("another audience", 401, "is not this endpoint's (127.0.0.1)"),
        ("unregistered subject", 403, "is not registered"),
        ("stranger issuer", 401, "is not trusted"),
        *((kind, 401, "The token is refused") for kind in KINDS),
    ],
)
def test_an_issuer_token_that_is_not_a_credential_here_is_refused(
    token_bench: TokenBench,
    rucio_client: RucioClient,
    fts_url: str,
    conveyor,
    case: str,
    status: int,
    reason: str,
) -> None:  # type: ignore[no-untyped-def]
    from transfers.models import TokenIdentity

    token = _fts_token(token_bench, rucio_client)
    if case == "no fts scope":
        token = _fts_token(token_bench, rucio_client, scope="storage.read:/")
    elif case == "another audience":
        token = _fts_token(token_bench, rucio_client, audience="fts3.elsewhere.example")
    elif case == "unregistered subject":
        TokenIdentity.objects.all().delete()
    elif case == "stranger issuer":
        token = stranger_token(token)
    else:
        token = forge(token, case)
    answer = _whoami(fts_url, token)
    assert answer.status_code == status and reason in answer.text, (answer.status_code, answer.text)
    assert token not in answer.text


def test_without_audiences_the_endpoint_takes_no_issuer_token(
    token_bench: TokenBench, rucio_client: RucioClient, fts_url: str, conveyor, settings
) -> None:  # type: ignore[no-untyped-def]
    settings.SRCNET_FTS3_TOKEN_AUDIENCES = []
    answer = _whoami(fts_url, _fts_token(token_bench, rucio_client))
    assert answer.status_code == 401 and "SRCNET_FTS3_TOKEN_AUDIENCES is empty" in answer.text, answer.text
