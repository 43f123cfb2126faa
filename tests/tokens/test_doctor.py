"""The token doctor finds what operators meet with tokens, says each problem in one line with what to change,
and answers operators only (API) with the CLI's documented exit code."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.test import override_settings

from localnet.issuer import realm_representation
from operations.token_doctor import UnknownTarget, check

from .conftest import TokenBench, token_settings

pytestmark = pytest.mark.django_db


@pytest.fixture
def doctor_settings(token_bench: TokenBench, endpoints: None) -> Iterator[dict[str, str]]:
    conf = token_settings(token_bench)
    with override_settings(SRCNET_TOKENS=conf):
        yield conf


def problems(findings: list) -> list:  # type: ignore[type-arg]
    return [f for f in findings if not f.ok]


def test_a_healthy_site_and_lane_pass_every_check(doctor_settings: dict[str, str]) -> None:
    site = check("TOKEN-A")
    assert not problems(site), [f.line() for f in site]
    assert {"issuer", "keys", "clock", "scopes", "audience", "storage", "refresh"} <= {f.check for f in site}
    lane = check("TOKEN-A:TOKEN-B")
    assert not problems(lane), [f.line() for f in lane]
    assert {"lifetime", "audience", "scopes"} <= {f.check for f in lane}


def test_an_issuer_that_does_not_answer_is_one_problem_naming_the_setting(
    token_bench: TokenBench, endpoints: None
) -> None:
    with override_settings(
        SRCNET_TOKENS=token_settings(token_bench, url="https://127.0.0.1:9/realms/srcnet")
    ):
        found = problems(check("TOKEN-A"))
    assert len(found) == 1
    assert found[0].check == "issuer" and "SRCNET_TOKEN_ISSUER" in found[0].fix


def test_a_site_that_does_not_accept_its_audience_is_named(
    doctor_settings: dict[str, str], token_bench: TokenBench
) -> None:
    from topology.models import StorageEndpoint

    # The endpoint says its storage accepts TOKEN-B's audience; the site behind it (TOKEN-A) does not.
    StorageEndpoint.objects.filter(name="TOKEN-A").update(token_audience=token_bench.audiences["TOKEN-B"])
    found = problems(check("TOKEN-A"))
    assert [f.check for f in found] == ["storage"], [f.line() for f in found]
    assert token_bench.audiences["TOKEN-B"] in found[0].fix


def test_an_audience_the_issuer_does_not_know_is_a_scope_problem(doctor_settings: dict[str, str]) -> None:
    from topology.models import StorageEndpoint

    StorageEndpoint.objects.filter(name="TOKEN-B").update(token_audience="nobody.srcnet.test")
    found = problems(check("TOKEN-B"))
    assert found and found[0].check == "scopes", [f.line() for f in found]
    assert "nobody.srcnet.test" in found[0].fix


def test_single_use_refresh_tokens_and_missing_storage_scopes_are_found(
    token_bench: TokenBench, endpoints: None
) -> None:
    admin, base = token_bench.issuer.admin_session(), token_bench.issuer.base
    realm = "single-use"
    if admin.get(f"{base}/admin/realms/{realm}").status_code == 404:
        representation = realm_representation("single-use-secret", 300, realm=realm)
        representation["revokeRefreshToken"] = True
        representation["refreshTokenMaxReuse"] = 0
        # This client may ask for reading only: the doctor's write scopes are not granted.
        representation["clients"][0]["optionalClientScopes"] = ["storage.read"]
        admin.post(f"{base}/admin/realms", json=representation).raise_for_status()
    from localnet.issuer import allow_audience

    allow_audience(token_bench.issuer, token_bench.audiences["TOKEN-A"], realm=realm)
    conf = token_settings(token_bench, url=f"{base}/realms/{realm}", client_secret="single-use-secret")
    with override_settings(SRCNET_TOKENS=conf):
        found = {f.check: f for f in problems(check("TOKEN-A"))}
    assert "refresh" in found and "reuse" in found["refresh"].fix
    assert "scopes" in found and "storage.create:/" in found["scopes"].message


def test_unknown_targets_are_refused_naming_them(doctor_settings: dict[str, str]) -> None:
    with pytest.raises(UnknownTarget, match="NOPE"):
        check("NOPE")
    with pytest.raises(UnknownTarget, match="NOPE"):
        check("TOKEN-A:NOPE")


def test_the_api_answers_operators_only_and_names_a_bad_target(
    doctor_settings: dict[str, str], django_user_model
) -> None:  # type: ignore[no-untyped-def]
    from rest_framework.test import APIClient

    url = "/api/operations/tokens/check/"
    scientist = django_user_model.objects.create_user("sci", password="x")
    operator = django_user_model.objects.create_user("op2", password="x", is_staff=True)
    client = APIClient()
    assert client.get(url, {"target": "TOKEN-A"}).status_code in (401, 403)
    client.force_authenticate(scientist)
    assert client.get(url, {"target": "TOKEN-A"}).status_code == 403
    client.force_authenticate(operator)
    answer = client.get(url, {"target": "TOKEN-A"})
    assert answer.status_code == 200 and answer.json()["ok"] is True
    bad = client.get(url, {"target": "NOPE"})
    assert bad.status_code == 400 and "NOPE" in bad.json()["target"][0]
