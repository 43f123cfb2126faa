"""Single sign-on through the real local issuer (Keycloak): the portal's authorization code flow with PKCE,
the issuer's groups mapped to roles and projects by the admin's mappings at every sign-on, local passwords
left to admins, and the issuer's bearer tokens at the REST API with the same accounts."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from django.contrib.auth import get_user_model
from django.test import Client

from identity.models import GroupMapping, MappedRole
from identity.oidc import Attempt, SignOnFailed, redeem
from identity.sso import sso_settings
from localnet.issuer import LocalIssuer
from localnet.issuer_sso import SignOnClients, ensure_person, ensure_sign_on
from localnet.state import StateDir
from projects.models import Project
from transfers.models import TokenIdentity

from .sign_on import approve_device, log_in

pytestmark = pytest.mark.django_db
CALLBACK = "http://testserver/sso/callback/"
AUDIENCE = "srcnet-api-test"
OPERATORS, MEMBERS, VO = "/ska/operators", "/ska/projects/eor", "/ska"


@pytest.fixture
def sign_on(settings, token_issuer: LocalIssuer, test_state: StateDir) -> Iterator[SignOnClients]:
    clients = ensure_sign_on(test_state, token_issuer, redirect_uris=[CALLBACK], api_audience=AUDIENCE)
    settings.SRCNET_SSO = clients.as_setting()
    settings.SRCNET_API_TOKEN_AUDIENCES = [AUDIENCE]
    yield clients


@pytest.fixture
def mapped():  # type: ignore[no-untyped-def]
    """The admin's mappings: the VO's members are scientists, its operators operators, a project's group
    its members."""
    eor = Project.objects.create(code="EOR-1", title="Epoch of reionisation", proprietary_days=365)
    GroupMapping.objects.create(group=VO, role=MappedRole.SCIENTIST)
    GroupMapping.objects.create(group=OPERATORS, role=MappedRole.OPERATOR)
    GroupMapping.objects.create(group=MEMBERS, role=MappedRole.SCIENTIST, project=eor)
    return eor


def person(issuer: LocalIssuer, *groups: str) -> tuple[str, str, str]:
    name = f"p{uuid.uuid4().hex[:10]}"
    password = uuid.uuid4().hex
    return name, password, ensure_person(issuer, name, password, list(groups))


def browser_for(issuer: LocalIssuer) -> requests.Session:
    browser = requests.Session()
    browser.verify = str(issuer.ca_file)
    browser.trust_env = False
    return browser


def sign_on_through_the_issuer(
    issuer: LocalIssuer, portal: Client, username: str, password: str, next_url: str = "/rules/"
) -> tuple[Any, dict[str, list[str]]]:
    """The browser's round: the portal sends it to the issuer, the person logs in, the issuer sends it back
    to the portal's callback with a code. Returns the portal's answer to the callback and its query."""
    start = portal.get("/sso/login/", {"next": next_url})
    assert start.status_code == 302, start.content
    to_issuer = start["Location"]
    asked = parse_qs(urlsplit(to_issuer).query)
    assert asked["code_challenge_method"] == ["S256"] and len(asked["code_challenge"][0]) == 43
    assert asked["redirect_uri"] == [CALLBACK] and asked["state"] and asked["nonce"]
    browser = browser_for(issuer)
    back = log_in(browser, browser.get(to_issuer, timeout=30), username, password)
    assert back.status_code == 302 and back.headers["Location"].startswith(CALLBACK), back.text[:300]
    query = parse_qs(urlsplit(back.headers["Location"]).query)
    answer = portal.get("/sso/callback/", {k: v[0] for k, v in query.items()})
    return answer, query


def test_a_person_signs_on_and_gets_the_role_and_projects_their_groups_map_to(sign_on, mapped, token_issuer):
    name, password, subject = person(token_issuer, VO, OPERATORS, MEMBERS)
    portal = Client()
    answer, _ = sign_on_through_the_issuer(token_issuer, portal, name, password)
    assert answer.status_code == 302 and answer["Location"] == "/rules/", answer.content[:500]
    user = get_user_model().objects.get(username=name)
    assert user.is_staff and not user.is_superuser and not user.has_usable_password()
    assert list(user.projects.values_list("code", flat=True)) == ["EOR-1"]
    assert TokenIdentity.objects.get(user=user).subject == subject
    assert portal.get("/api/").json()["role"] == "operator"
    # Regrouped at the issuer: at the next sign-on the account follows (no longer an operator nor a member;
    # a project no mapping names is left as an operator set it).
    other = Project.objects.create(code="OTHER", title="Set by hand", proprietary_days=0)
    other.members.add(user)
    ensure_person(token_issuer, name, password, [VO])
    again = Client()
    assert sign_on_through_the_issuer(token_issuer, again, name, password)[0].status_code == 302
    user.refresh_from_db()
    assert not user.is_staff and list(user.projects.values_list("code", flat=True)) == ["OTHER"]
    assert again.get("/api/").json()["role"] == "scientist"
    assert get_user_model().objects.filter(username__startswith=name).count() == 1


def test_a_person_none_of_whose_groups_is_mapped_is_refused_and_no_account_is_made(
    sign_on, mapped, token_issuer
):
    name, password, _ = person(token_issuer, "/elsewhere")
    portal = Client()
    answer, _ = sign_on_through_the_issuer(token_issuer, portal, name, password)
    assert answer.status_code == 403 and b"none of the groups /elsewhere gives access" in answer.content
    assert not get_user_model().objects.filter(username=name).exists()
    assert portal.get("/api/").status_code == 401


def test_a_callback_not_started_here_or_used_twice_is_refused(sign_on, mapped, token_issuer):
    name, password, _ = person(token_issuer, VO)
    portal = Client()
    answer, query = sign_on_through_the_issuer(token_issuer, portal, name, password)
    assert answer.status_code == 302
    portal.logout()
    replayed = portal.get("/sso/callback/", {k: v[0] for k, v in query.items()})
    assert replayed.status_code == 403 and b"not started here, or was already used" in replayed.content
    # Another browser bringing someone else's code: no sign-on of its own under way.
    stranger = Client()
    assert stranger.get("/sso/callback/", {k: v[0] for k, v in query.items()}).status_code == 403
    # A forged state in a browser that did start one.
    stranger.get("/sso/login/")
    forged = stranger.get("/sso/callback/", {"state": "forged", "code": query["code"][0]})
    assert forged.status_code == 403 and "_auth_user_id" not in stranger.session


def test_the_issuer_takes_the_code_only_with_its_pkce_verifier(sign_on, mapped, token_issuer):
    name, password, _ = person(token_issuer, VO)
    portal = Client()
    start = portal.get("/sso/login/")
    browser = browser_for(token_issuer)
    back = log_in(browser, browser.get(start["Location"], timeout=30), name, password)
    code = parse_qs(urlsplit(back.headers["Location"]).query)["code"][0]
    kept = Attempt.from_session(portal.session["srcnet_sso_attempt"])
    assert kept is not None
    wrong = Attempt(kept.state, kept.nonce, "x" * 64, "/")
    with pytest.raises(SignOnFailed, match="refused the sign-on code"):
        redeem(sso_settings(), wrong, code, CALLBACK)


def test_with_sign_on_local_passwords_are_the_admins_only(sign_on, scientist, site_admin):
    portal = Client()
    page = portal.get("/login/")
    assert b"Sign in with the local issuer" in page.content
    refused = portal.post("/login/", {"username": "sci", "password": "sci"})
    assert refused.status_code == 200 and "_auth_user_id" not in portal.session
    assert Client().post("/api/token/", {"username": "sci", "password": "sci"}).status_code == 400
    admitted = portal.post("/login/", {"username": "adm", "password": "adm"})
    assert admitted.status_code == 302 and portal.session["_auth_user_id"] == str(site_admin.pk)


def test_an_account_of_the_same_name_is_never_taken_over(sign_on, mapped, token_issuer, django_user_model):
    name, password, _ = person(token_issuer, VO)
    local = django_user_model.objects.create_user(name, password="local", is_staff=True)
    answer, _ = sign_on_through_the_issuer(token_issuer, Client(), name, password)
    assert answer.status_code == 302
    made = TokenIdentity.objects.get(issuer=token_issuer.url).user
    assert made.pk != local.pk and made.username.startswith(f"{name}-") and not made.is_staff


def device_token(issuer: LocalIssuer, name: str, password: str, scope: str) -> str:
    """An access token of the CLI's client for ``name`` with ``scope``, by the device code flow."""
    base = f"{issuer.url}/protocol/openid-connect"
    started = requests.post(
        f"{base}/auth/device",
        data={"client_id": "srcnet-cli", "scope": f"openid {scope}"},
        verify=str(issuer.ca_file),
        timeout=30,
    )
    assert started.status_code == 200, started.text
    grant = started.json()
    approve_device(browser_for(issuer), grant["verification_uri_complete"], name, password)
    answer = requests.post(
        f"{base}/token",
        data={
            "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
            "device_code": grant["device_code"],
            "client_id": "srcnet-cli",
        },
        verify=str(issuer.ca_file),
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    return str(answer.json()["access_token"])


def test_the_issuers_tokens_open_the_rest_api_as_the_same_account_within_their_scope(
    sign_on, mapped, token_issuer
):
    name, password, _ = person(token_issuer, VO, MEMBERS)
    reader = Client(HTTP_AUTHORIZATION=f"Bearer {device_token(token_issuer, name, password, 'srcnet.read')}")
    me = reader.get("/api/")
    assert me.status_code == 200 and me.json()["role"] == "scientist", me.content
    user = get_user_model().objects.get(username=name)
    assert list(user.projects.values_list("code", flat=True)) == ["EOR-1"]
    refused = reader.post("/api/rules/rules/", {"product": "ska:nothing"}, content_type="application/json")
    assert refused.status_code == 403 and "scope is 'read'" in refused.json()["detail"]
    writer = Client(HTTP_AUTHORIZATION=f"Bearer {device_token(token_issuer, name, password, 'srcnet.rules')}")
    answered = writer.post("/api/rules/rules/", {"product": "ska:nothing"}, content_type="application/json")
    assert answered.status_code == 400 and "product" in answered.json()  # in scope: judged on its content
    # Without an API scope, or for another audience, nothing opens.
    bare = Client(HTTP_AUTHORIZATION=f"Bearer {device_token(token_issuer, name, password, '')}")
    assert bare.get("/api/").status_code == 403


def test_an_identity_an_admin_registered_keeps_its_account_as_set(
    sign_on, mapped, token_issuer, django_user_model
):
    """A service's identity (registered with fts3_identity, not by sign-on) is not rewritten by its groups."""
    name, password, subject = person(token_issuer, VO)
    service = django_user_model.objects.create_user(f"svc-{name}", is_staff=True)
    TokenIdentity.objects.create(issuer=token_issuer.url, subject=subject, user=service)
    token = device_token(token_issuer, name, password, "srcnet.read")
    assert Client(HTTP_AUTHORIZATION=f"Bearer {token}").get("/api/").json()["role"] == "operator"
    service.refresh_from_db()
    assert service.is_staff and TokenIdentity.objects.filter(subject=subject).count() == 1
    assert not get_user_model().objects.filter(username=name).exists()
