"""Personal API tokens (identity/tokens.py): hashed at rest and shown once, expiring, scoped, listed and
revoked by their owner and by admins, their last use recorded; and the REST API and the FTS3 endpoint each
open only to their own tokens."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone
from drf_spectacular.generators import SchemaGenerator

from identity.models import ApiToken
from identity.tokens import digest_of, issue
from operations.models import AuditEvent
from tests.api.test_authorization_matrix import concrete

pytestmark = pytest.mark.django_db


def bearer(key: str) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {key}")


def test_a_password_buys_a_token_shown_once_and_kept_only_as_a_digest(scientist):
    made = Client().post("/api/token/", {"username": "sci", "password": "sci", "scope": "read"})
    assert made.status_code == 201, made.content
    body = made.json()
    key = body["key"]
    assert key.startswith("srcnet_") and len(key) > 40 and body["scope"] == "read"
    assert timedelta(days=29) < datetime.fromisoformat(body["expires"]) - timezone.now() <= timedelta(days=30)
    row = ApiToken.objects.get(pk=body["id"])
    assert row.digest == digest_of(key) and row.user == scientist
    # Nowhere in the database in clear: not in the token's row, not in the audit trail.
    with connection.cursor() as cursor:
        for table in ("identity_apitoken", "operations_auditevent"):
            cursor.execute(f"SELECT * FROM {table}")
            assert key not in repr(cursor.fetchall())
    # It opens the API; listing it again never shows the key.
    assert bearer(key).get("/api/replicas/products/").status_code == 200
    listed = bearer(key).get(f"/api/identity/tokens/{row.pk}/").json()
    assert "key" not in listed and listed["prefix"] == key[:11] and listed["state"] == "live"
    # A wrong password buys nothing, and says nothing of the account.
    refused = Client().post("/api/token/", {"username": "sci", "password": "wrong"})
    assert refused.status_code == 400 and ApiToken.objects.count() == 1


def test_an_expired_a_revoked_and_a_disabled_accounts_token_open_nothing(scientist, django_user_model):
    expired_row, expired = issue(scientist, name="old", scope="read")
    ApiToken.objects.filter(pk=expired_row.pk).update(expires=timezone.now() - timedelta(seconds=1))
    revoked_row, revoked = issue(scientist, name="gone", scope="read")
    assert bearer(revoked).delete(f"/api/identity/tokens/{revoked_row.pk}/").status_code == 200
    other = django_user_model.objects.create_user("left", password="x")
    _, disabled = issue(other, name="theirs", scope="read")
    other.is_active = False
    other.save()
    for key, reason in (
        (expired, "expired"),
        (revoked, "revoked"),
        (disabled, "disabled"),
        ("srcnet_x", "Unknown"),
    ):
        answer = bearer(key).get("/api/replicas/products/")
        assert answer.status_code == 401 and reason in answer.json()["detail"], (reason, answer.content)
        assert answer["WWW-Authenticate"].startswith("Bearer")


def write_operations() -> list[tuple[str, str]]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return sorted(
        (path, method)
        for path, item in schema["paths"].items()
        for method in item
        if method in ("post", "put", "patch", "delete") and path != "/api/token/"
    )


def test_a_read_token_of_an_admin_reads_everything_and_changes_nothing(site_admin):
    _, key = issue(site_admin, name="dashboard", scope="read")
    client = bearer(key)
    assert client.get("/api/transfers/link-limits/").status_code == 200
    wrong = []
    for path, method in write_operations():
        answer = getattr(client, method)(concrete(path), data="{}", content_type="application/json")
        if answer.status_code != 403 or "scope is 'read'" not in answer.json().get("detail", ""):
            wrong.append(f"{method.upper()} {path}: {answer.status_code}")
    assert not wrong, "\n".join(wrong)


def test_a_rules_token_writes_rules_and_subscriptions_only(site_admin):
    _, key = issue(site_admin, name="notebook", scope="rules")
    client = bearer(key)
    opened = []
    for path, method in write_operations():
        answer = getattr(client, method)(concrete(path), data="{}", content_type="application/json")
        if answer.status_code != 403:
            opened.append(path)
    assert opened and all(p.startswith(("/api/rules/rules/", "/api/rules/subscriptions/")) for p in opened), (
        opened
    )
    # Made with an operate token, a rule's removal is open to the rules token too (its own account's).
    assert {p.split("/")[3] for p in opened} == {"rules", "subscriptions"}


def test_tokens_are_their_owners_and_an_admin_sees_and_revokes_anyones(
    scientist, site_admin, django_user_model
):
    mine, my_key = issue(scientist, name="laptop", scope="operate")
    other = django_user_model.objects.create_user("sci2", password="x")
    theirs, their_key = issue(other, name="theirs", scope="read")
    me = bearer(my_key)
    assert [t["name"] for t in me.get("/api/identity/tokens/").json()["results"]] == ["laptop"]
    assert me.get(f"/api/identity/tokens/{theirs.pk}/").status_code == 404
    assert me.delete(f"/api/identity/tokens/{theirs.pk}/").status_code == 404
    assert bearer(their_key).get("/api/replicas/products/").status_code == 200
    _, admin_key = issue(site_admin, name="admin", scope="operate")
    admin = bearer(admin_key)
    names = {t["name"] for t in admin.get("/api/identity/tokens/").json()["results"]}
    assert {"laptop", "theirs", "admin"} <= names
    assert [t["name"] for t in admin.get("/api/identity/tokens/?user=sci2").json()["results"]] == ["theirs"]
    revoked = admin.delete(f"/api/identity/tokens/{theirs.pk}/")
    assert revoked.status_code == 200 and revoked.json()["state"] == "revoked"
    assert revoked.json()["revoked_by"] == "adm"
    assert bearer(their_key).get("/api/replicas/products/").status_code == 401
    # Both in the audit trail; the scientist sees their own token's events only.
    assert AuditEvent.objects.filter(action="revoke_token", target_id=str(theirs.pk), username="adm").exists()
    seen = {e["target_id"] for e in me.get("/api/operations/audit-events/").json()["results"]}
    assert str(mine.pk) in seen and str(theirs.pk) not in seen


def test_a_tokens_last_use_and_address_are_recorded(scientist):
    row, key = issue(scientist, name="ci", scope="read")
    assert row.last_used is None
    bearer(key).get("/api/replicas/products/", REMOTE_ADDR="192.0.2.7")
    row.refresh_from_db()
    assert row.last_used is not None and row.last_used_from == "192.0.2.7"
    assert timezone.now() - row.last_used < timedelta(seconds=30)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "x", "scope": "everything"}, "scope"),
        ({"name": "x", "expires_in_days": 366}, "expires_in_days"),
        ({"name": "x", "expires_in_days": 0}, "expires_in_days"),
        ({"name": ""}, "name"),
        ({"name": "x\x00y"}, "name"),
    ],
)
def test_a_token_request_out_of_bounds_is_refused_naming_the_field(scientist, body, field):
    _, key = issue(scientist, name="maker", scope="operate")
    answer = bearer(key).post("/api/identity/tokens/", body, content_type="application/json")
    assert answer.status_code == 400 and field in answer.json(), answer.content
    assert ApiToken.objects.count() == 1


def test_an_account_holds_at_most_its_quota_of_live_tokens(scientist, settings):
    settings.SRCNET_API_TOKENS_PER_ACCOUNT = 3
    _, key = issue(scientist, name="maker", scope="operate")
    client = bearer(key)
    for n in range(2):
        assert client.post("/api/identity/tokens/", {"name": f"t{n}"}).status_code == 201
    refused = client.post("/api/identity/tokens/", {"name": "one too many"})
    assert (
        refused.status_code == 400
        and "tokens" in refused.json()
        and "3 live tokens" in refused.json()["tokens"]
    )
    assert ApiToken.objects.filter(user=scientist).count() == 3


def test_the_rest_api_and_the_fts3_endpoint_each_open_to_their_own_tokens(operator):
    _, fts3_key = issue(operator, name="rucio", scope="fts3")
    _, api_key = issue(operator, name="cli", scope="operate")
    refused = bearer(fts3_key).get("/api/replicas/products/")
    assert refused.status_code == 403 and "fts3" in refused.json()["detail"]
    assert bearer(fts3_key).get("/fts3/whoami").status_code == 200
    refused = bearer(api_key).get("/fts3/whoami")
    assert refused.status_code == 403 and "scope is 'operate'" in refused.json()["message"]
    assert bearer("srcnet_not-a-token").get("/fts3/whoami").status_code == 401


def test_the_management_command_issues_lists_and_revokes(scientist, capsys):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    call_command("api_token", "issue", "sci", "--scope", "read", "--days", "2")
    key = capsys.readouterr().out.strip()
    assert bearer(key).get("/api/replicas/products/").status_code == 200
    row = ApiToken.objects.get(digest=digest_of(key))
    call_command("api_token", "list", "sci")
    assert f"{row.pk}\tsci\tread\tlive" in capsys.readouterr().out
    call_command("api_token", "revoke", str(row.pk))
    assert bearer(key).get("/api/replicas/products/").status_code == 401
    with pytest.raises(CommandError, match="--days"):
        call_command("api_token", "issue", "sci", "--days", "9999")
    with pytest.raises(CommandError, match="no account"):
        call_command("api_token", "issue", "nobody")
