"""The local issuer is a real OAuth2/OIDC server issuing WLCG JWT profile 1.0 access tokens."""

from __future__ import annotations

import time

import pytest
import requests

from localnet.issuer_rucio import RucioClient
from tests.forgeries import claims, jose_header
from transfers.tokens import TokenError

from .conftest import TokenBench, rucio_style_token

pytestmark = pytest.mark.django_db(transaction=False)


def test_the_issuer_publishes_discovery_and_the_keys_that_sign_its_tokens(token_bench: TokenBench) -> None:
    ca = str(token_bench.issuer.ca_file)
    discovery = requests.get(
        f"{token_bench.issuer.url}/.well-known/openid-configuration", verify=ca, timeout=30
    )
    assert discovery.ok
    document = discovery.json()
    assert document["issuer"] == token_bench.issuer.url
    grants = set(document["grant_types_supported"])
    assert {
        "client_credentials",
        "refresh_token",
        "urn:ietf:params:oauth:grant-type:token-exchange",
    } <= grants
    keys = requests.get(document["jwks_uri"], verify=ca, timeout=30).json()["keys"]
    token = token_bench.token("TOKEN-A", "storage.read:/x")
    header = jose_header(token.value)
    assert header["alg"] == "RS256"
    assert header["kid"] in {key["kid"] for key in keys}


def test_a_client_credentials_token_carries_the_wlcg_profile_claims(token_bench: TokenBench) -> None:
    before = int(time.time())
    token = token_bench.token("TOKEN-A", "storage.read:/ukrsc/products", "storage.create:/ukrsc/incoming")
    body = claims(token.value)
    assert body["wlcg.ver"] == "1.0"
    assert body["iss"] == token_bench.issuer.url
    assert body["aud"] == token_bench.audiences["TOKEN-A"]
    assert body["sub"] and body["jti"]
    assert set(str(body["scope"]).split()) == {
        "storage.read:/ukrsc/products",
        "storage.create:/ukrsc/incoming",
    }
    assert body["wlcg.groups"] == ["/ska"]
    assert before - 5 <= int(body["iat"]) == int(body["nbf"]) <= int(body["exp"])  # type: ignore[call-overload]
    assert token.refresh_token


def test_a_refresh_token_serves_more_than_once_and_keeps_scope_and_audience(token_bench: TokenBench) -> None:
    token = token_bench.token("TOKEN-B", "storage.modify:/a")
    for _ in range(3):
        renewed = token_bench.client.refresh(token)
        body = claims(renewed.value)
        assert body["scope"] == "storage.modify:/a"
        assert body["aud"] == token_bench.audiences["TOKEN-B"]
        assert renewed.value != token.value
        token = renewed


def test_a_token_is_exchanged_for_a_narrower_one(token_bench: TokenBench) -> None:
    """RFC 8693: the service exchanges a token it was handed for one of its own with fewer rights."""
    given = token_bench.token("TOKEN-A", "storage.read:/a", "storage.modify:/a")
    answer = requests.post(
        token_bench.issuer.token_endpoint,
        data={
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
            "client_id": token_bench.issuer.client_id,
            "client_secret": token_bench.issuer.client_secret,
            "subject_token": given.value,
            "subject_token_type": "urn:ietf:params:oauth:token-type:access_token",
            "scope": "storage.read:/a",
        },
        verify=str(token_bench.issuer.ca_file),
        timeout=30,
    )
    assert answer.ok, answer.text
    assert claims(answer.json()["access_token"])["scope"] == "storage.read:/a"


def test_a_client_with_a_wrong_secret_is_refused_with_the_issuers_reason(token_bench: TokenBench) -> None:
    from dataclasses import replace

    from transfers.tokens import TokenClient

    wrong = TokenClient(replace(token_bench.client.issuer, client_secret="not-the-secret"))
    with pytest.raises(TokenError, match=r"refused .*HTTP 401"):
        wrong.fetch(["storage.read:/a"], token_bench.audiences["TOKEN-A"])
    assert "not-the-secret" not in repr(wrong.issuer)


def test_a_token_is_asked_for_once_per_directory_and_site_while_it_has_life_enough(
    token_bench: TokenBench,
) -> None:
    from transfers.tokens import TokenClient

    client = TokenClient(token_bench.client.issuer)
    first = client.fetch(["storage.read:/kept/a"], token_bench.audiences["TOKEN-A"])
    again = client.fetch(["storage.read:/kept/a"], token_bench.audiences["TOKEN-A"])
    assert again.value == first.value and client.grants == 1
    client.fetch(["storage.read:/kept/b"], token_bench.audiences["TOKEN-A"])
    client.fetch(["storage.read:/kept/a"], token_bench.audiences["TOKEN-B"])
    assert client.grants == 3
    # A kept token close to its end is not handed out again: a new one is asked for.
    client._kept[(("storage.read:/kept/a",), token_bench.audiences["TOKEN-A"])].expires_at = time.time() + 1
    renewed = client.fetch(["storage.read:/kept/a"], token_bench.audiences["TOKEN-A"])
    assert client.grants == 4 and renewed.value != first.value


def test_rucios_client_gets_the_audience_it_asks_for_as_a_parameter(
    token_bench: TokenBench, rucio_client: RucioClient
) -> None:
    """Rucio asks for a token's audience with the ``audience`` parameter, as INDIGO IAM takes it; the
    project's script mapper on Rucio's client (localnet/keycloak/wlcg-audience.js) honours it, and adds the
    transfer service's client, which Keycloak's token exchange requires. The service's own client asks by
    scope: the parameter gives it nothing."""
    token = rucio_style_token(
        token_bench, rucio_client, audience="storage.example.org", scope="storage.read:/x offline_access"
    )
    body = claims(token)
    assert body["aud"] == ["srcnet-transfers", "storage.example.org"]
    assert body["azp"] == "rucio" and body["sub"] == rucio_client.subject and body["wlcg.ver"] == "1.0"
    assert "storage.read:/x" in str(body["scope"]).split()
    issuer = token_bench.issuer
    answer = requests.post(
        issuer.token_endpoint,
        data={
            "grant_type": "client_credentials",
            "client_id": issuer.client_id,
            "client_secret": issuer.client_secret,
            "audience": "storage.example.org",
            "scope": "storage.read:/x",
        },
        verify=str(issuer.ca_file),
        timeout=30,
    )
    assert answer.ok, answer.text
    assert "storage.example.org" not in str(claims(answer.json()["access_token"]).get("aud"))
