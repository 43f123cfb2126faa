"""Failed sign-ins are limited at every place that takes a password (the portal's login page, the admin
site's, the REST API's token endpoint): after 5 failures for one account from one address, or 20 for any
accounts from one address, within 15 minutes, that account there (or that address) gets 429 with the wait,
the right password included, until the oldest failure leaves the window. Each failure is logged (never the
password) and counted in a metric, each refusal too."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from prometheus_client import REGISTRY

from identity.models import SignInFailure

PASSWORD = "correct horse battery staple"
ATTACKER, NEIGHBOUR = "203.0.113.7", "198.51.100.4"


@pytest.fixture
def alice(django_user_model):  # type: ignore[no-untyped-def]
    return django_user_model.objects.create_user("alice", password=PASSWORD, is_staff=True, is_superuser=True)


def _metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def _portal(address: str, username: str, password: str):  # type: ignore[no-untyped-def]
    client = Client(REMOTE_ADDR=address)
    return client, client.post(reverse("login"), {"username": username, "password": password})


def _token(address: str, username: str, password: str):  # type: ignore[no-untyped-def]
    return Client(REMOTE_ADDR=address).post(
        reverse("api-token"), {"username": username, "password": password}
    )


def _admin(address: str, username: str, password: str):  # type: ignore[no-untyped-def]
    client = Client(REMOTE_ADDR=address)
    return client, client.post(reverse("admin-login"), {"username": username, "password": password})


def _age_failures(minutes: int) -> None:
    """As if the failures had happened ``minutes`` earlier (the window is 15 minutes)."""
    for failure in SignInFailure.objects.all():
        failure.at -= timedelta(minutes=minutes)
        failure.save(update_fields=["at"])


def test_the_portal_locks_an_account_at_an_address_after_five_failures(alice, caplog):  # type: ignore[no-untyped-def]
    failures_before = _metric("srcnet_sign_in_failures_total", place="portal")
    refusals_before = _metric("srcnet_sign_in_refusals_total", place="portal", limit="account")
    with caplog.at_level(logging.WARNING, logger="srcnet.sign_in"):
        for _ in range(5):
            _, answer = _portal(ATTACKER, "Alice", "guess")
            assert answer.status_code == 200 and "_auth_user_id" not in answer.wsgi_request.session
        client, locked = _portal(ATTACKER, "alice", PASSWORD)  # the right password, too late
    assert locked.status_code == 429 and "_auth_user_id" not in client.session
    assert int(locked["Retry-After"]) > 14 * 60
    assert "Too many failed sign-ins for this account from your address" in locked.content.decode()
    assert _metric("srcnet_sign_in_failures_total", place="portal") == failures_before + 5
    assert _metric("srcnet_sign_in_refusals_total", place="portal", limit="account") == refusals_before + 1
    said = caplog.text
    assert "sign-in failed for 'alice' from 203.0.113.7 at portal (5 of 5" in said
    assert "sign-in refused for 'alice' from 203.0.113.7" in said
    assert "guess" not in said and PASSWORD not in said  # never a password
    # Alice, from her own address, signs in as usual.
    client, answer = _portal(NEIGHBOUR, "alice", PASSWORD)
    assert answer.status_code == 302 and client.session["_auth_user_id"] == str(alice.pk)
    # Once the failures are older than the window, the right password signs in there too, and its
    # account's failures at that address are forgotten.
    _age_failures(16)
    client, answer = _portal(ATTACKER, "alice", PASSWORD)
    assert answer.status_code == 302 and client.session["_auth_user_id"] == str(alice.pk)
    assert not SignInFailure.objects.filter(address=ATTACKER, username="alice").exists()


def test_the_lock_lasts_until_the_oldest_counted_failure_leaves_the_window(alice):  # type: ignore[no-untyped-def]
    for _ in range(5):
        _portal(ATTACKER, "alice", "guess")
    _age_failures(10)
    _, locked = _portal(ATTACKER, "alice", PASSWORD)
    assert locked.status_code == 429 and 4 * 60 <= int(locked["Retry-After"]) <= 5 * 60


def test_an_address_spraying_passwords_over_accounts_is_locked_after_twenty(alice):  # type: ignore[no-untyped-def]
    for number in range(20):
        _portal(ATTACKER, f"user{number}", "guess")  # four accounts, five each would lock each; one each
    _, locked = _portal(ATTACKER, "alice", PASSWORD)
    assert locked.status_code == 429
    assert "Too many failed sign-ins for your address" in locked.content.decode()
    assert _token(NEIGHBOUR, "alice", PASSWORD).status_code == 201  # another address is not


def test_the_api_token_endpoint_has_the_same_limit(alice):  # type: ignore[no-untyped-def]
    for _ in range(5):
        answer = _token(ATTACKER, "alice", "guess")
        assert answer.status_code == 400 and "token" not in answer.json()
    locked = _token(ATTACKER, "alice", PASSWORD)
    assert locked.status_code == 429 and "token" not in locked.json()
    assert locked.json()["retry_after"] == int(locked["Retry-After"]) > 14 * 60
    assert set(SignInFailure.objects.values_list("place", flat=True)) == {"api-token"}
    # The failures count wherever they happened: the portal is locked for that account there as well.
    assert _portal(ATTACKER, "alice", PASSWORD)[1].status_code == 429
    answer = _token(NEIGHBOUR, "alice", PASSWORD)
    assert answer.status_code == 201 and answer.json()["token"]


def test_the_admin_login_has_the_same_limit(alice):  # type: ignore[no-untyped-def]
    for _ in range(5):
        _, answer = _admin(ATTACKER, "alice", "guess")
        assert answer.status_code == 200
    client, locked = _admin(ATTACKER, "alice", PASSWORD)
    assert locked.status_code == 429 and "_auth_user_id" not in client.session
    assert set(SignInFailure.objects.values_list("place", flat=True)) == {"admin"}
    client, answer = _admin(NEIGHBOUR, "alice", PASSWORD)
    assert answer.status_code == 302 and client.session["_auth_user_id"] == str(alice.pk)


def test_a_failure_keeps_no_password_and_old_ones_are_dropped(alice):  # type: ignore[no-untyped-def]
    _portal(ATTACKER, "alice", "hunter2")
    _age_failures(20)
    _portal(ATTACKER, "bob", "hunter3")  # recording one drops those older than the window
    (failure,) = SignInFailure.objects.all()
    assert (failure.username, failure.address, failure.place) == ("bob", ATTACKER, "portal")
    assert "hunter" not in str([getattr(failure, f.name) for f in SignInFailure._meta.fields])


@pytest.mark.parametrize("username", ["al\x00ice", ["alice"], {"name": "alice"}, "x" * 5000])
def test_any_user_name_is_counted_and_answered_without_a_server_error(alice, username):  # type: ignore[no-untyped-def]
    """Found by the role fuzzing (seed 511300061): a NUL in the user name was a 500 at the token endpoint."""
    client = Client(REMOTE_ADDR=ATTACKER)
    token = client.post(
        reverse("api-token"), {"username": username, "password": "guess"}, content_type="application/json"
    )
    assert token.status_code == 400
    portal = client.post(reverse("login"), {"username": str(username), "password": "guess"})
    assert portal.status_code == 200
