"""FTS3's configuration API on the embedded service: /config/links, /config/se and /config/activity_shares
with FTS3's fields, status codes and answer shapes (as fts-rest's own tests and the Rucio-SENSE DMM use
them), who may call them, and bodies refused whole: 400 naming the field, nothing written."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from identity.tokens import issue
from transfers.models import ActivityShare, LinkLimit, StorageElementLimit
from transfers.services.dispatch import DEFAULT_SE_MAX_ACTIVE, _se_caps

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("recorded_storage")]
A, B, C = "root://a.example.org:1094", "root://b.example.org:1094", "davs://aus.example.org:443"
NOWHERE = "root://nowhere.example.org:1094"


def _client(user: Any) -> Client:
    token = issue(user, name="test", scope="fts3")[1]
    return Client(HTTP_AUTHORIZATION=f"Bearer {token}")


@pytest.fixture
def fts(scheduler_account) -> Client:  # type: ignore[no-untyped-def]
    return _client(scheduler_account)


def post(client: Client, path: str, body: Any):  # type: ignore[no-untyped-def]
    return client.post(path, body, content_type="application/json")


def _links() -> list[tuple[Any, ...]]:
    return list(
        LinkLimit.objects.order_by("pk").values_list(
            "symbolicname", "source_se", "dest_se", "min_active", "max_active", "optimizer_mode", "nostreams"
        )
    )


# What the Rucio-SENSE DMM posts to fix a link's concurrency (every field it sends).
DMM_LINK = {
    "symbolicname": "a-to-b",
    "source": A,
    "destination": B,
    "max_active": 7,
    "min_active": 7,
    "nostreams": 0,
    "optimizer_mode": 0,
    "no_delegation": False,
    "tcp_buffer_size": 0,
}


def test_a_link_is_set_read_changed_renamed_and_deleted_by_its_symbolic_name(fts):
    created = post(fts, "/fts3//config/links", DMM_LINK)  # the fts3 client's double slash
    assert created.status_code == 201, created.content
    assert created.json() == {**DMM_LINK, "tcp_buffer_size": None}
    assert _links() == [("a-to-b", A, B, 7, 7, 0, 0)]
    assert fts.get("/fts3/config/links").json() == [created.json()]
    assert fts.get("/fts3/config/links/a-to-b").json() == created.json()

    # Only the fields given change; the row is the one of that name.
    changed = post(
        fts, "/fts3/config/links", {"symbolicname": "a-to-b", "max_active": 12, "optimizer_mode": 2}
    )
    assert changed.status_code == 201
    assert _links() == [("a-to-b", A, B, 7, 12, 2, 0)]
    # A new name for the same pair: the pair's row takes it (FTS3 merges on source and destination).
    renamed = post(fts, "/fts3/config/links", {"symbolicname": "ab", "source": A, "destination": B})
    assert renamed.status_code == 201 and renamed.json()["max_active"] == 12
    assert _links() == [("ab", A, B, 7, 12, 2, 0)]
    assert fts.get("/fts3/config/links/a-to-b").status_code == 404

    assert fts.delete("/fts3/config/links/ab").status_code == 204
    assert _links() == []
    missing = fts.get("/fts3/config/links/ab")
    assert missing.status_code == 404 and missing.json()["message"] == "symbolicname: Link ab does not exist"
    assert fts.delete("/fts3/config/links/ab").status_code == 204  # as FTS3: no error for a missing name


def test_a_link_set_as_it_already_is_writes_nothing(fts):
    """The push loop sets a lane's link as it submits each product there, mostly as it already is: such a
    POST answers the link as before and writes nothing (no UPDATE, no dispatch asked); one that changes a
    field still saves it."""
    assert post(fts, "/fts3/config/links", DMM_LINK).status_code == 201
    with CaptureQueriesContext(connection) as queries:
        again = post(fts, "/fts3/config/links", DMM_LINK)
    assert again.status_code == 201 and again.json() == {**DMM_LINK, "tcp_buffer_size": None}
    writes = [q["sql"] for q in queries if q["sql"].lstrip().upper().startswith(("UPDATE", "INSERT"))]
    assert writes == []
    assert post(fts, "/fts3/config/links", {**DMM_LINK, "max_active": 9}).status_code == 201
    assert _links() == [("a-to-b", A, B, 7, 9, 0, 0)]


def test_a_new_link_takes_fts3s_defaults(fts):
    assert (
        post(fts, "/fts3/config/links", {"symbolicname": "ac", "source": A, "destination": C}).status_code
        == 201
    )
    assert post(fts, "/fts3/config/links", {"symbolicname": "any", "max_active": 40}).status_code == 201
    assert _links() == [("ac", A, C, 2, 2, 0, None), ("any", "*", "*", 2, 40, 0, None)]
    # Integers written as strings are taken, as FTS3 casts them.
    assert (
        post(fts, "/fts3/config/links", {"symbolicname": "ac", "max_active": "9"}).json()["max_active"] == 9
    )


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"source": A, "destination": B}, "symbolicname"),
        ({**DMM_LINK, "symbolicname": None}, "symbolicname"),
        ({**DMM_LINK, "symbolicname": "a/b"}, "symbolicname"),
        ({**DMM_LINK, "source": NOWHERE}, "source"),
        ({**DMM_LINK, "destination": "root://a.example.org"}, "destination"),  # FTS3's portless name
        ({**DMM_LINK, "min_active": 150, "max_active": 25}, "max_active"),
        ({**DMM_LINK, "max_active": "many"}, "max_active"),
        ({**DMM_LINK, "max_active": True}, "max_active"),
        ({**DMM_LINK, "min_active": 0}, "min_active"),
        ({**DMM_LINK, "optimizer_mode": 5}, "optimizer_mode"),
        ({**DMM_LINK, "nostreams": 99}, "nostreams"),
        ({**DMM_LINK, "nostreams": None}, "nostreams"),
        ({**DMM_LINK, "tcp_buffer_size": 4096}, "tcp_buffer_size"),
        ({**DMM_LINK, "no_delegation": "maybe"}, "no_delegation"),
        ({**DMM_LINK, "share": 3}, "share"),
        ([DMM_LINK], "body"),
    ],
)
def test_a_refused_link_names_the_field_and_changes_nothing(fts, body, field):
    assert post(fts, "/fts3/config/links", {**DMM_LINK, "symbolicname": "kept"}).status_code == 201
    before = _links()
    answer = post(fts, "/fts3/config/links", body)
    assert answer.status_code == 400, answer.content
    assert answer.json()["status"] == "400 Bad Request"
    assert answer.json()["message"].startswith(f"{field}: "), answer.json()
    assert _links() == before


def test_an_existing_link_is_not_half_changed(fts):
    assert post(fts, "/fts3/config/links", DMM_LINK).status_code == 201
    # A valid max_active beside an invalid nostreams: neither is applied.
    answer = post(fts, "/fts3/config/links", {"symbolicname": "a-to-b", "max_active": 50, "nostreams": 100})
    assert answer.status_code == 400 and answer.json()["message"].startswith("nostreams: ")
    # Moving a link onto a pair another link configures would make two rows for one link.
    assert (
        post(fts, "/fts3/config/links", {"symbolicname": "other", "source": B, "destination": A}).status_code
        == 201
    )
    moved = post(fts, "/fts3/config/links", {"symbolicname": "other", "source": A, "destination": B})
    assert moved.status_code == 400 and "configured already, as the link 'a-to-b'" in moved.json()["message"]
    assert _links() == [("a-to-b", A, B, 7, 7, 0, 0), ("other", B, A, 2, 2, 0, None)]


def test_bodies_that_are_no_json_are_refused(fts):
    for raw in (b"{", b"[" * 100000, b"\xff"):
        answer = fts.post("/fts3/config/links", raw, content_type="application/json")
        assert answer.status_code == 400 and answer.json()["message"] == "body: is not valid JSON"
    assert _links() == []


def test_only_the_config_role_may_read_or_change_the_configuration(
    client, operator, scientist, site_admin, scheduler_account
):
    requests = [
        ("post", "/fts3/config/links", DMM_LINK),
        ("get", "/fts3/config/links", None),
        ("get", "/fts3/config/links/a-to-b", None),
        ("delete", "/fts3/config/links/a-to-b", None),
        ("post", "/fts3/config/se", {A: {"se_info": {"inbound_max_active": 3}}}),
        ("get", "/fts3/config/se", None),
        ("delete", "/fts3/config/se?se=" + A, None),
        ("post", "/fts3/config/activity_shares", {"vo": "ska", "share": {"x": 1}}),
        ("get", "/fts3/config/activity_shares", None),
        ("delete", "/fts3/config/activity_shares/ska", None),
    ]

    def status(who: Client, method: str, path: str, body: Any) -> int:
        if method == "post":
            return int(post(who, path, body).status_code)
        return int(getattr(who, method)(path).status_code)

    for method, path, body in requests:
        assert status(client, method, path, body) == 401, (method, path)
        for user in (scientist, operator):
            assert status(_client(user), method, path, body) == 403, (user, method, path)
    assert not LinkLimit.objects.exists() and not StorageElementLimit.objects.exists()
    assert not ActivityShare.objects.exists()
    for user in (site_admin, scheduler_account):
        for method, path, body in requests:
            assert status(_client(user), method, path, body) in (200, 201, 204), (user, method, path)


def test_storage_caps_as_the_dmm_sets_them_and_merged_with_the_default(fts):
    def se_info(inbound: int | None, outbound: int | None) -> dict[str, Any]:
        # Every field the DMM sends, nulls for what it leaves alone.
        keys = ("inbound_max_throughput", "outbound_max_throughput", "udt", "ipv6", "se_metadata", "site")
        nulls: dict[str, Any] = dict.fromkeys((*keys, "debug_level", "eviction"))
        return {**nulls, "inbound_max_active": inbound, "outbound_max_active": outbound}

    body = {A: {"se_info": se_info(None, 3)}, B: {"se_info": se_info(5, None)}}
    answer = post(fts, "/fts3/config/se", body)
    assert answer.status_code == 200, answer.content
    info, operations = answer.json()
    assert info["storage"] == B and info["inbound_max_active"] == 5 and operations is None
    rows = {
        r.storage_element: (r.inbound_max_active, r.outbound_max_active)
        for r in StorageElementLimit.objects.all()
    }
    assert rows == {A: (None, 3), B: (5, None)}
    # A null leaves the cap as it is; a value changes only its own.
    assert (
        post(
            fts, "/fts3/config/se", {A: {"se_info": se_info(8, None)}, "*": {"se_info": se_info(50, 60)}}
        ).status_code
        == 200
    )
    got = fts.get("/fts3/config/se", {"se": A}).json()
    assert list(got) == [A] and got[A]["se_info"]["inbound_max_active"] == 8
    assert got[A]["se_info"]["outbound_max_active"] == 3 and got[A]["se_info"]["ipv6"] is None
    assert set(fts.get("/fts3/config/se").json()) == {A, B, "*"}
    # The caps the dispatcher applies: the storage's own, else the '*' row's, else the service default.
    inbound, outbound = _se_caps()
    assert (inbound[A], outbound[A], inbound[B], outbound[B]) == (8, 3, 5, 60)
    assert (inbound[C], outbound[C]) == (50, 60)

    missing = fts.delete("/fts3/config/se")
    assert missing.status_code == 400 and missing.json()["message"] == "se: Missing storage (se)"
    assert fts.delete("/fts3/config/se", QUERY_STRING=f"se={A}").status_code == 204
    assert fts.delete("/fts3/config/se?se=*").status_code == 204
    inbound, _ = _se_caps()
    assert inbound[A] == DEFAULT_SE_MAX_ACTIVE and inbound[B] == 5


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({NOWHERE: {"se_info": {"inbound_max_active": 3}}}, NOWHERE),
        ({" ": {"se_info": {"inbound_max_active": 3}}}, " "),
        ({A: {"se_info": {"inbound_max_throughput": 100}}}, f"{A}.se_info.inbound_max_throughput"),
        ({A: {"se_info": {"ipv6": 1}}}, f"{A}.se_info.ipv6"),
        ({A: {"se_info": {"inbound_max_active": "x"}}}, f"{A}.se_info.inbound_max_active"),
        ({A: {"se_info": {"outbound_max_active": 0}}}, f"{A}.se_info.outbound_max_active"),
        ({A: {"se_info": {"colour": "red"}}}, f"{A}.se_info.colour"),
        ({A: {"operations": {"ska": {"staging": 32}}}}, f"{A}.operations.ska.staging"),
        ({A: {"limits": {}}}, f"{A}.limits"),
        ({A: 3}, A),
        ({}, "body"),
        ("this has nothing to do", "body"),
    ],
)
def test_a_refused_storage_body_names_the_field_and_writes_nothing(fts, body, field):
    assert post(fts, "/fts3/config/se", {C: {"se_info": {"inbound_max_active": 4}}}).status_code == 200
    # The bad storage comes after a good one in the same body: neither is written.
    if isinstance(body, dict) and body:
        body = {B: {"se_info": {"inbound_max_active": 9}}, **body}
    answer = post(fts, "/fts3/config/se", body)
    assert answer.status_code == 400, answer.content
    assert answer.json()["message"].startswith(f"{field}: "), answer.json()
    assert list(StorageElementLimit.objects.values_list("storage_element", "inbound_max_active")) == [(C, 4)]


def test_no_limit_on_operations_is_accepted(fts):
    # FTS3 reads a limit of 0 or less as "no limit": nothing to refuse.
    answer = post(fts, "/fts3/config/se", {A: {"operations": {"ska": {"staging": 0}}, "se_info": {}}})
    assert answer.status_code == 200 and answer.json() == [None, {"ska": {"staging": 0}}]
    assert not StorageElementLimit.objects.exists()


def test_activity_shares_in_both_of_fts3s_forms(fts, client):
    answer = post(
        fts, "/fts3/config/activity_shares", {"vo": "ska", "share": {"High": 80, "Medium": 15, "Low": 5}}
    )
    assert answer.status_code == 200, answer.content
    assert answer.json() == {
        "vo": "ska",
        "activity_share": [{"High": 80}, {"Medium": 15}, {"Low": 5}],
        "active": True,
    }
    assert dict(ActivityShare.objects.values_list("activity", "weight")) == {
        "High": 80,
        "Medium": 15,
        "Low": 5,
    }
    assert fts.get("/fts3/config/activity_shares").json() == {
        "ska": {"share": {"High": 80, "Low": 5, "Medium": 15}, "active": True}
    }
    assert fts.get("/fts3/config/activity_shares/ska").json()["share"]["High"] == 80
    # The older list form; a POST replaces the whole set.
    legacy = {"vo": "ska", "active": True, "share": [{"A": 1}, {"B": 2.5}]}
    assert post(fts, "/fts3/config/activity_shares", legacy).status_code == 200
    assert dict(ActivityShare.objects.values_list("activity", "weight")) == {"A": 1.0, "B": 2.5}

    assert fts.delete("/fts3/config/activity_shares/ska").status_code == 204
    assert not ActivityShare.objects.exists()
    assert fts.get("/fts3/config/activity_shares").json() == {}
    assert fts.get("/fts3/config/activity_shares/ska").status_code == 404
    assert fts.delete("/fts3/config/activity_shares/ska").status_code == 404
    assert fts.delete("/fts3/config/activity_shares/atlas").status_code == 404
    assert fts.delete("/fts3/config/activity_shares").status_code == 405


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"active": True, "share": {"A": 1}}, "vo"),
        ({"vo": "atlas", "share": {"A": 1}}, "vo"),
        ({"vo": "ska", "active": True}, "share"),
        ({"vo": "ska", "share": {"A": 1, "B": "abc"}}, "share.B"),
        ({"vo": "ska", "share": [{"A": 1}, {"B": "abc"}]}, "share.B"),
        ({"vo": "ska", "share": [{"A": 1, "B": 2}]}, "share"),
        ({"vo": "ska", "share": {"A": -1}}, "share.A"),
        ({"vo": "ska", "share": {"A": True}}, "share.A"),
        ({"vo": "ska", "share": {"x" * 65: 1}}, "share." + "x" * 65),
        ({"vo": "ska", "share": {f"activity{i}": i for i in range(100)}}, "share"),
        ({"vo": "ska", "share": {"A": 1}, "active": False}, "active"),
        ({"vo": "ska", "share": {"A": 1}, "weights": {}}, "weights"),
        ("this has nothing to do", "body"),
    ],
)
def test_a_refused_share_set_names_the_field_and_keeps_the_old_one(fts, body, field):
    assert post(fts, "/fts3/config/activity_shares", {"vo": "ska", "share": {"kept": 3}}).status_code == 200
    answer = post(fts, "/fts3/config/activity_shares", body)
    assert answer.status_code == 400, answer.content
    assert answer.json()["message"].startswith(f"{field}: "), answer.json()
    assert list(ActivityShare.objects.values_list("activity", "weight")) == [("kept", 3.0)]


def test_a_certificate_identity_may_be_given_the_config_role(django_user_model):
    from io import StringIO

    from django.core.management import call_command

    from srcnet.roles import may_configure_transfers, may_submit_transfers

    user = django_user_model.objects.create_user("scheduler")
    out = StringIO()
    call_command("fts3_identity", "/O=srcnet-local/CN=scheduler", "scheduler", "--configurer", stdout=out)
    user = django_user_model.objects.get(pk=user.pk)
    assert may_configure_transfers(user) and not may_submit_transfers(user)
    assert out.getvalue().strip() == (
        "/O=srcnet-local/CN=scheduler -> scheduler (may configure links, storage and shares)"
    )
