"""Projects and proprietary periods, tested as a matrix: who sees which product, its replicas and its
transfers, on every surface that shows them (REST API, portal pages; the CLI reads the API: tests/cli).

Three products: observatory data (no project), a product of project AA01 still proprietary, and one of
AA01 whose proprietary period is over. Four accounts: an operator (not a member), a member of AA01, a
scientist outside it, and nobody (anonymous)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.test import Client
from django.utils import timezone

from operations.choices import AuditAction, TargetType
from operations.selectors import carrier_paths
from operations.services import record_event
from projects.models import Project
from replicas.models import DataProduct
from replicas.services import FileSpec, register_product
from topology.models import StorageEndpoint, Telescope
from transfers.choices import FileState
from transfers.models import TransferFile, TransferJob

pytestmark = pytest.mark.django_db

PUBLIC, SECRET, RELEASED = "obs-public", "obs-secret", "obs-released"
EVERYTHING = {PUBLIC, SECRET, RELEASED}
SEES = {
    "operator": EVERYTHING,
    "member": EVERYTHING,
    "outsider": {PUBLIC, RELEASED},
}
# The jobs of no product each account sees (by their metadata's note).
OWN_JOBS = {
    "operator": {"conveyor", "member's own"},
    "member": {"member's own"},
    "outsider": set(),
}


@pytest.fixture
def world(reference_topology, django_user_model):  # type: ignore[no-untyped-def]
    users = {
        "operator": django_user_model.objects.create_user("op", is_staff=True),
        "member": django_user_model.objects.create_user("member"),
        "outsider": django_user_model.objects.create_user("outsider"),
    }
    project = Project.objects.create(code="AA01", title="Cosmic dawn", proprietary_days=365)
    project.members.add(users["member"])
    low = Telescope.objects.get(name="SKA1-Low")
    # Each product's copy is under way from the SDP to UKSRC, so the live views (flows, the path) list it.
    sdp, uk = (StorageEndpoint.objects.get(name=n) for n in ("SKA1-LOW_SDP", "UKSRC_DISK"))
    products = {}
    for name, in_project in ((PUBLIC, False), (SECRET, True), (RELEASED, True)):
        product = register_product(
            scope="ska1-low",
            name=name,
            telescope=low,
            files=[FileSpec(f"{name}.ms", 1024, "00000001")],
            project=project if in_project else None,
        )
        job = TransferJob.objects.create(metadata={"product": product.did})
        TransferFile.objects.create(
            job=job,
            file_index=0,
            state=FileState.ACTIVE,
            source_surl=f"root://{sdp.hostname}:{sdp.root_port}//ska1-low/{name}/{name}.ms",
            dest_surl=f"root://{uk.hostname}:{uk.root_port}//ska1-low/{name}/{name}.ms",
        )
        products[name] = product
        # An operator's action on the job, in the audit trail with the product it moves.
        record_event(
            user=users["operator"],
            action=AuditAction.JOB_PRIORITY,
            target_type=TargetType.JOB,
            target_id=str(job.job_id),
            target=str(job.job_id),
            details={"from": 3, "to": 4, "product": product.did},
        )
    DataProduct.objects.filter(pk=products[RELEASED].pk).update(
        proprietary_until=timezone.now() - dt.timedelta(days=1)
    )
    # Jobs of no product (an FTS3 client's own submission: Rucio's conveyor, a service) are seen by
    # whoever submitted them and by operators only.
    TransferJob.objects.create(metadata={"note": "conveyor"})
    TransferJob.objects.create(metadata={"note": "member's own"}, submitter=users["member"])
    for product in products.values():  # an operator's action on each, in the audit trail
        record_event(
            user=users["operator"],
            action=AuditAction.PRODUCT_PRIORITY,
            target_type=TargetType.PRODUCT,
            target_id=product.pk,
            target=product.did,
            details={"from": 3, "to": 4},
        )
    return users, products


def sdp_site_id() -> int:
    return StorageEndpoint.objects.get(name="SKA1-LOW_SDP").site_id


def uk_site_id() -> int:
    return StorageEndpoint.objects.get(name="UKSRC_DISK").site_id


def _client(user) -> Client:  # type: ignore[no-untyped-def]
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def _names_in(text: str) -> set[str]:
    return {name for name in EVERYTHING if name in text}


@pytest.mark.parametrize("who", sorted(SEES))
def test_each_surface_shows_exactly_the_products_the_account_may_see(world, who) -> None:  # type: ignore[no-untyped-def]
    users, products = world
    client, expected = _client(users[who]), SEES[who]

    listed = client.get("/api/replicas/products/", {"page_size": 100}).json()["results"]
    assert {p["name"] for p in listed} == expected
    for name, product in products.items():
        detail = client.get(f"/api/replicas/products/{product.pk}/")
        assert detail.status_code == (200 if name in expected else 404), (name, detail.status_code)
        page = client.get(f"/replicas/products/{product.pk}/")
        assert page.status_code == (200 if name in expected else 404), (name, page.status_code)
    replicas = client.get("/api/replicas/replicas/", {"page_size": 100}).json()["results"]
    assert {r["product"].split(":")[1] for r in replicas} == expected

    jobs = client.get("/api/transfers/jobs/", {"page_size": 100}).json()["results"]
    products_moved = {j["metadata"].get("product", "").partition(":")[2] for j in jobs} - {""}
    assert products_moved == expected
    assert {j["metadata"]["note"] for j in jobs if "note" in j["metadata"]} == OWN_JOBS[who]
    files = client.get("/api/transfers/files/", {"page_size": 100}).json()["results"]
    assert _names_in(" ".join(f["source_surl"] for f in files)) == expected

    # The live views: every copy counts in the load, only the visible ones are listed with their names.
    flows = client.get("/api/operations/flows/").json()
    assert {f["product"].partition(":")[2] for f in flows["active"]} == expected
    assert sum(p["active"] for p in flows["paths"]) == len(EVERYTHING)
    path = carrier_paths([(sdp_site_id(), uk_site_id())])[(sdp_site_id(), uk_site_id())]
    detail = client.get(f"/api/operations/paths/{path.pk}/").json()
    assert {f["product"].partition(":")[2] for f in detail["flows"]} == expected and detail["active"] == 3
    assert _names_in(client.get("/transfers/flows/").content.decode()) == expected

    assert _names_in(client.get("/replicas/products/").content.decode()) == expected
    assert _names_in(client.get("/transfers/").content.decode()) == expected

    events = client.get("/api/operations/audit-events/", {"page_size": 100}).json()["results"]
    assert _names_in(" ".join(e["target"] for e in events)) == expected
    assert _names_in(" ".join(str(e["details"]) for e in events)) == expected
    assert len([e for e in events if e["target_type"] == "job"]) == len(expected)
    assert _names_in(client.get("/operations/audit/").content.decode()) == expected


def test_anonymous_sees_nothing(world) -> None:  # type: ignore[no-untyped-def]
    _, products = world
    client = _client(None)
    assert client.get("/api/replicas/products/").status_code in (401, 403)
    assert client.get(f"/api/replicas/products/{products[PUBLIC].pk}/").status_code in (401, 403)
    assert client.get("/replicas/products/").status_code == 302  # to the login page


def test_a_product_of_a_project_is_proprietary_for_the_projects_period(world) -> None:  # type: ignore[no-untyped-def]
    _, products = world
    secret = products[SECRET]
    expected = secret.created + dt.timedelta(days=365)
    assert abs((secret.proprietary_until - expected).total_seconds()) < 5
    assert products[PUBLIC].project is None and products[PUBLIC].proprietary_until is None


def test_projects_api_members_see_their_own_and_operators_manage_them(world) -> None:  # type: ignore[no-untyped-def]
    users, _ = world
    member, outsider, operator = (_client(users[k]) for k in ("member", "outsider", "operator"))
    assert [p["code"] for p in member.get("/api/projects/projects/").json()["results"]] == ["AA01"]
    assert outsider.get("/api/projects/projects/").json()["results"] == []
    body = {"code": "AA02", "title": "Pulsars", "proprietary_days": 30, "members": ["outsider"]}
    assert outsider.post("/api/projects/projects/", body, content_type="application/json").status_code == 403
    made = operator.post("/api/projects/projects/", body, content_type="application/json")
    assert made.status_code == 201, made.content
    assert [p["code"] for p in outsider.get("/api/projects/projects/").json()["results"]] == ["AA02"]
    bad = operator.post(
        "/api/projects/projects/",
        {"code": "no spaces", "proprietary_days": -1, "members": ["nobody"]},
        content_type="application/json",
    )
    assert bad.status_code == 400 and {"code", "proprietary_days", "members"} <= set(bad.json())
    assert not Project.objects.filter(code="no spaces").exists()


def test_registering_a_product_names_its_project_and_an_unknown_one_is_refused(world) -> None:  # type: ignore[no-untyped-def]
    users, _ = world
    operator = _client(users["operator"])
    body = {
        "scope": "ska1-low",
        "name": "obs-new",
        "telescope": "SKA1-Low",
        "project": "AA01",
        "files": [{"name": "a.ms", "size_bytes": 10, "adler32": "00000001"}],
    }
    made = operator.post("/api/replicas/products/", body, content_type="application/json")
    assert made.status_code == 201, made.content
    assert made.json()["project"] == "AA01" and made.json()["proprietary_until"]
    assert _client(users["outsider"]).get(f"/api/replicas/products/{made.json()['id']}/").status_code == 404
    refused = operator.post(
        "/api/replicas/products/",
        {**body, "name": "obs-new2", "project": "ZZ99"},
        content_type="application/json",
    )
    assert refused.status_code == 400 and "project" in refused.json()
    assert not DataProduct.objects.filter(name="obs-new2").exists()
