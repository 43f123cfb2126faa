"""The authorization matrix's other half: every role the matrix allows a write operation of the REST API
succeeds with valid input (2xx) and the change is in the database, each role in turn. The operations are
read from the OpenAPI schema: one this module does not prove fails ``test_every_write_operation_is_proven``.
(tests/api/test_authorization_matrix.py proves the refusals.)"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db.models import Model
from django.test import Client

from campaigns.models import Campaign
from identity.models import ApiToken
from identity.tokens import issue
from projects.models import Project
from replicas.models import DataProduct, ReplicaPolicy
from rules.models import Rule, Subscription
from schedulers.models import PathMeasurement, Simulation
from srcnet.roles import Role
from tests.api.test_authorization_matrix import OPERATIONS, required_role
from tests.campaigns.inputs import GOOD as CAMPAIGN
from tests.conftest import register_storage
from topology.models import (
    Dtn,
    Link,
    NetworkPath,
    PointOfPresence,
    RegionalCentre,
    StorageEndpoint,
    Telescope,
    Vrf,
)
from transfers.models import ActivityShare, LinkLimit, LinkPause, StorageElementLimit, TransferJob

pytestmark = pytest.mark.django_db
_numbers = itertools.count(1)

SITE = {
    "region": "europe",
    "country": "GB",
    "latitude": 51.5,
    "longitude": -0.1,
    "vrf": "geant",
    "description": "",
}


def product_body(tag: str) -> dict[str, Any]:
    return {
        "scope": "ska",
        "name": f"obs-{tag}",
        "telescope": "SKA1-Low",
        "priority": 3,
        "files": [{"name": "a.ms", "size_bytes": 1000, "adler32": "0cc737eb"}],
    }


@dataclass
class Resource:
    """A collection of the API with create, change (PATCH and PUT) and delete, and the model behind it."""

    path: str
    model: Any  # the model class (its manager is read: type[Model] has none to mypy)
    body: Callable[[str], dict[str, Any]]
    change: tuple[str, Any]  # a field and a new value, for PATCH and PUT
    stored: Callable[[Model], Any] = field(default=lambda obj: None)  # how the field reads in the database
    deletable: bool = True
    puttable: bool = True  # a product is never put whole (its files do not change): PATCH only

    def read(self, obj: Model) -> Any:
        value = self.stored(obj)
        return getattr(obj, self.change[0]) if value is None else value


RESOURCES = [
    Resource(
        "/api/topology/telescopes/",
        Telescope,
        lambda t: {"name": f"T-{t}", **SITE, "daily_volume_bytes": 10**12, "sdp_buffer_bytes": 10**12},
        ("description", "patched"),
    ),
    Resource(
        "/api/topology/regional-centres/",
        RegionalCentre,
        lambda t: {"name": f"SRC-{t}", **SITE},
        ("share_weight", 3.0),
    ),
    Resource(
        "/api/topology/points-of-presence/",
        PointOfPresence,
        lambda t: {"name": f"PoP-{t}", **SITE},
        ("operator", "NREN"),
    ),
    Resource(
        "/api/topology/storage-endpoints/",
        StorageEndpoint,
        lambda t: {
            "name": f"SE_{t.upper()}",
            "site": "UKSRC",
            "role": "disk",
            "hostname": f"se-{t}.example.org",
            "root_port": 1094,
            "http_port": 443,
            "prefix": "/srcnet/",
            "tpc_scheme": "davs",
        },
        ("root_port", 1095),
    ),
    Resource(
        "/api/topology/dtns/",
        Dtn,
        lambda t: {
            "name": f"dtn-{t}",
            "site": "UKSRC",
            "hostname": f"dtn-{t}.example.org",
            "nic_speed_bps": 10**11,
        },
        ("nic_speed_bps", 4 * 10**10),
    ),
    Resource(
        "/api/topology/vrfs/",
        Vrf,
        lambda t: {
            "name": f"vrf-{t}",
            "scope": "national",
            "route_distinguisher": f"64999:{next(_numbers)}",
            "parent": "geant",
        },
        ("description", "patched"),
    ),
    Resource(
        "/api/topology/links/",
        Link,
        lambda t: {
            "name": f"link-{t}",
            "a_end": "Amsterdam",
            "b_end": "Frankfurt",
            "kind": "backbone",
            "capacity_bps": 10**11,
            "rtt_ms": 9.0,
            "vrfs": ["geant"],
        },
        ("rtt_ms", 11.0),
    ),
    Resource(
        "/api/topology/paths/",
        NetworkPath,
        lambda t: {
            "name": f"path-{t}",
            "source": "Amsterdam",
            "destination": "Frankfurt",
            "links": ["amsterdam-frankfurt"],
        },
        ("name", "renamed"),
        stored=lambda obj: str(getattr(obj, "name", "")).split("-")[0],  # a unique name per role: its stem
    ),
    Resource(
        "/api/projects/projects/",
        Project,
        lambda t: {"code": f"P-{t}", "title": "A project", "proprietary_days": 30, "members": []},
        ("proprietary_days", 90),
    ),
    Resource(
        "/api/replicas/policies/",
        ReplicaPolicy,
        lambda t: {
            "name": f"pol-{t}",
            "telescope": "SKA1-Low",
            "is_active": False,
            "kind": "full_copy",
            "copy_site": "UKSRC",
        },
        ("is_active", False),
    ),
    Resource(
        "/api/replicas/products/",
        DataProduct,
        product_body,
        ("priority", 5),
        deletable=False,
        puttable=False,
    ),
    Resource(
        "/api/transfers/activity-shares/",
        ActivityShare,
        lambda t: {"activity": f"act-{t}", "weight": 3},
        ("weight", 7),
    ),
    Resource(
        "/api/transfers/link-limits/",
        LinkLimit,
        lambda t: {"source_se": f"root://ll{t}.example.org:1094", "dest_se": "*", "max_active": 2},
        ("max_active", 9),
    ),
    Resource(
        "/api/transfers/storage-limits/",
        StorageElementLimit,
        lambda t: {"storage_element": f"root://sl{t}.example.org:1094", "inbound_max_active": 5},
        ("inbound_max_active", 6),
    ),
]


def client_of(role: Role) -> tuple[Any, Client]:
    number = next(_numbers)
    user = get_user_model().objects.create_user(
        f"proof-{role.name.lower()}-{number}",
        password="pw",
        is_staff=role >= Role.OPERATOR,
        is_superuser=role >= Role.ADMIN,
    )
    return user, Client(HTTP_AUTHORIZATION=f"Bearer {issue(user, name='proof', scope='operate')[1]}")


def allowed(path: str) -> list[Role]:
    return [r for r in (Role.SCIENTIST, Role.OPERATOR, Role.ADMIN) if r >= required_role(path)]


PROVEN: set[tuple[str, str]] = set()


def proves(*operations: tuple[str, str]) -> None:
    PROVEN.update(operations)


for resource in RESOURCES:
    proves((resource.path, "post"), (f"{resource.path}{{id}}/", "patch"))
    if resource.puttable:
        proves((f"{resource.path}{{id}}/", "put"))
    if resource.deletable:
        proves((f"{resource.path}{{id}}/", "delete"))


@pytest.mark.parametrize("resource", RESOURCES, ids=lambda r: r.path.split("/api/")[1].rstrip("/"))
def test_each_allowed_role_creates_changes_and_deletes(resource: Resource, reference_topology):
    for role in allowed(resource.path):
        _, client = client_of(role)
        tag = f"{role.name.lower()[:3]}{next(_numbers)}"
        if resource.model in (LinkLimit, StorageElementLimit):
            register_storage(f"root://{'ll' if resource.model is LinkLimit else 'sl'}{tag}.example.org:1094")
        made = client.post(resource.path, resource.body(tag), content_type="application/json")
        assert made.status_code == 201, (role, made.content[:400])
        obj = resource.model.objects.get(pk=made.json()["id"])
        name, value = resource.change
        detail = f"{resource.path}{obj.pk}/"
        value_for = f"{value}-{tag}" if name == "name" else value
        patched = client.patch(detail, {name: value_for}, content_type="application/json")
        assert patched.status_code == 200, (role, patched.content[:400])
        obj.refresh_from_db()
        assert resource.read(obj) == (value if name != "name" else "renamed"), (role, name)
        if resource.puttable:
            put = client.put(detail, {**resource.body(tag), name: value_for}, content_type="application/json")
            assert put.status_code == 200, (role, put.content[:400])
            obj.refresh_from_db()
            assert resource.read(obj) == (value if name != "name" else "renamed")
        if resource.deletable:
            assert client.delete(detail).status_code == 204, role
            assert not resource.model.objects.filter(pk=obj.pk).exists(), role


proves(("/api/replicas/products/{id}/push/", "post"))


def test_each_allowed_role_pushes_a_product(reference_topology):
    for role in allowed("/api/replicas/products/"):
        _, client = client_of(role)
        made = client.post(
            "/api/replicas/products/", product_body(f"push{next(_numbers)}"), content_type="application/json"
        )
        pushed = client.post(f"/api/replicas/products/{made.json()['id']}/push/")
        assert pushed.status_code in (200, 201), (role, pushed.content[:300])
        product = DataProduct.objects.get(pk=made.json()["id"])
        assert product.replicas.exists(), role  # placed by the policy: its replicas are planned


proves(("/api/replicas/products/batch/", "post"))


def test_each_allowed_role_registers_a_batch_of_products(reference_topology):
    for role in allowed("/api/replicas/products/batch/"):
        _, client = client_of(role)
        bodies = [product_body(f"batch{next(_numbers)}") for _ in range(2)]
        made = client.post(
            "/api/replicas/products/batch/", {"products": bodies}, content_type="application/json"
        )
        assert made.status_code == 201, (role, made.content[:300])
        dids = [r["did"] for r in made.json()["registered"]]
        assert dids == [f"ska:{b['name']}" for b in bodies], role
        assert DataProduct.objects.filter(name__in=[b["name"] for b in bodies]).count() == 2, role


proves(("/api/transfers/jobs/", "post"), ("/api/transfers/jobs/{job_id}/cancel/", "post"))


def test_each_allowed_role_submits_and_cancels_a_job():
    register_storage("root://a.example.org:1094", "davs://b.example.org:443")
    for role in allowed("/api/transfers/jobs/"):
        _, client = client_of(role)
        payload = {
            "file_requests": [
                {
                    "source": "root://a.example.org:1094//data/f",
                    "destination": "davs://b.example.org:443/data/f",
                }
            ]
        }
        made = client.post("/api/transfers/jobs/", payload, content_type="application/json")
        assert made.status_code == 201, (role, made.content[:300])
        job_id = made.json()["job_id"]
        assert client.post(f"/api/transfers/jobs/{job_id}/cancel/").status_code == 200, role
        assert TransferJob.objects.get(job_id=job_id).state == "CANCELED", role


proves(("/api/transfers/link-pauses/", "post"), ("/api/transfers/link-pauses/{id}/", "delete"))


def test_each_allowed_role_pauses_and_resumes_a_link():
    register_storage("root://pa.example.org:1094", "davs://pb.example.org:443")
    for role in allowed("/api/transfers/link-pauses/"):
        _, client = client_of(role)
        body = {
            "source_se": "root://pa.example.org:1094",
            "dest_se": "davs://pb.example.org:443",
            "reason": "works",
        }
        made = client.post("/api/transfers/link-pauses/", body, content_type="application/json")
        assert made.status_code == 201, (role, made.content[:300])
        assert LinkPause.objects.filter(pk=made.json()["id"]).exists()
        assert client.delete(f"/api/transfers/link-pauses/{made.json()['id']}/").status_code == 204
        assert not LinkPause.objects.exists(), role


proves(
    ("/api/campaigns/", "post"),
    ("/api/campaigns/{id}/stop/", "post"),
    ("/api/campaigns/{id}/resume/", "post"),
    ("/api/campaigns/{id}/", "delete"),
)


def test_each_allowed_role_runs_a_campaign_through_its_life(reference_topology):
    for role in allowed("/api/campaigns/"):
        _, client = client_of(role)
        body = {**CAMPAIGN, "name": f"dc-{next(_numbers)}", "every_seconds": 3600}
        made = client.post("/api/campaigns/", body, content_type="application/json")
        assert made.status_code == 201, (role, made.content[:300])
        campaign = Campaign.objects.get(pk=made.json()["id"])
        stopped = client.post(f"/api/campaigns/{campaign.pk}/stop/")
        assert stopped.status_code == 200, (role, stopped.content[:300])
        campaign.refresh_from_db()
        assert campaign.state == Campaign.State.STOPPED, role
        resumed = client.post(f"/api/campaigns/{campaign.pk}/resume/")
        assert resumed.status_code == 200, (role, resumed.content[:300])
        campaign.refresh_from_db()
        assert campaign.state == Campaign.State.RECURRING, role  # every_seconds: a recurring campaign
        assert client.delete(f"/api/campaigns/{campaign.pk}/").status_code == 204, role
        assert not Campaign.objects.filter(pk=campaign.pk).exists(), role


proves(
    ("/api/rules/rules/", "post"),
    ("/api/rules/rules/{id}/", "delete"),
    ("/api/rules/subscriptions/", "post"),
    ("/api/rules/subscriptions/{id}/", "delete"),
)


def test_each_account_makes_and_removes_its_rules_and_subscriptions(reference_topology):
    _, registrar = client_of(Role.OPERATOR)
    registrar.post("/api/replicas/products/", product_body("ruled"), content_type="application/json")
    for role in allowed("/api/rules/"):
        user, client = client_of(role)
        made = client.post(
            "/api/rules/rules/",
            {"product": "ska:obs-ruled", "srcs": ["UKSRC"]},
            content_type="application/json",
        )
        assert made.status_code == 201, (role, made.content[:300])
        assert Rule.objects.get(pk=made.json()["id"]).owner == user
        assert client.delete(f"/api/rules/rules/{made.json()['id']}/").status_code == 204, role
        assert not Rule.objects.filter(pk=made.json()["id"]).exists(), role
        body = {"filters": {"telescope": "SKA1-Low"}, "srcs": ["UKSRC"], "copies": 1}
        subscribed = client.post("/api/rules/subscriptions/", body, content_type="application/json")
        assert subscribed.status_code == 201, (role, subscribed.content[:300])
        assert Subscription.objects.get(pk=subscribed.json()["id"]).owner == user
        assert client.delete(f"/api/rules/subscriptions/{subscribed.json()['id']}/").status_code == 204, role
        assert not Subscription.objects.filter(pk=subscribed.json()["id"]).exists(), role


proves(("/api/identity/tokens/", "post"), ("/api/identity/tokens/{id}/", "delete"), ("/api/token/", "post"))


def test_each_account_makes_and_revokes_its_tokens():
    for role in (Role.SCIENTIST, Role.OPERATOR, Role.ADMIN):
        user, client = client_of(role)
        made = client.post(
            "/api/identity/tokens/", {"name": "laptop", "scope": "read"}, content_type="application/json"
        )
        assert made.status_code == 201 and ApiToken.objects.get(pk=made.json()["id"]).user == user, role
        revoked = client.delete(f"/api/identity/tokens/{made.json()['id']}/")
        assert (
            revoked.status_code == 200 and ApiToken.objects.get(pk=made.json()["id"]).revoked is not None
        ), role
        by_password = Client().post("/api/token/", {"username": user.username, "password": "pw"})
        assert by_password.status_code == 201 and ApiToken.objects.filter(user=user).count() == 3, role


proves(
    ("/api/schedulers/measurements/", "post"),
    ("/api/schedulers/simulations/", "post"),
    ("/api/topology/import/", "post"),
)


def test_each_allowed_role_records_measurements_asks_for_simulations_and_imports(reference_topology):
    from tests.conftest import REFERENCE_TOPOLOGY

    measured = {
        "source": "SKA1-Low",
        "destination": "UKSRC",
        "streams": 4,
        "bytes": 10**9,
        "seconds": 10.0,
        "throughput_bps": 8e8,
        "rtt_ms": 223.1,
    }
    for role in allowed("/api/schedulers/measurements/"):
        _, client = client_of(role)
        before = PathMeasurement.objects.count()
        assert (
            client.post(
                "/api/schedulers/measurements/", measured, content_type="application/json"
            ).status_code
            == 201
        )
        assert PathMeasurement.objects.count() == before + 1, role
        asked = {"scenario": "one_replica", "days": 0.05, "topology": "reference", "with_lp": False}
        simulation = client.post("/api/schedulers/simulations/", asked, content_type="application/json")
        assert (
            simulation.status_code == 201 and Simulation.objects.filter(pk=simulation.json()["id"]).exists()
        ), role
        text = REFERENCE_TOPOLOGY.read_text().replace("Pawsey, Perth", f"Pawsey, Perth ({role.name})")
        imported = client.post("/api/topology/import/", text, content_type="application/x-yaml")
        assert imported.status_code in (200, 201), (role, imported.content[:300])
        assert RegionalCentre.objects.get(name="AUSRC").description == f"Pawsey, Perth ({role.name})", role


proves(
    ("/api/consistency/checks/", "post"),
    ("/api/consistency/findings/{id}/remove/", "post"),
    ("/api/consistency/findings/{id}/keep/", "post"),
)


def test_each_allowed_role_checks_storage_and_decides_on_dark_files(reference_topology, xrootd_sites):
    """Against a real site (a dark file's removal acts on its storage); the check's task is queued once the
    transaction commits, which this test's never does."""
    from consistency.choices import CheckState, FindingAction, FindingKind
    from consistency.models import ConsistencyCheck, Finding
    from tests.integration.conftest import put_file, unique

    site = xrootd_sites["UKSRC_DISK"]
    StorageEndpoint.objects.filter(name="UKSRC_DISK").update(
        hostname="127.0.0.1",
        root_port=site.root_port,
        http_port=site.http_port,
        token_audience=site.audience,
    )
    for role in allowed("/api/consistency/checks/"):
        user, client = client_of(role)
        body = {"endpoint": "UKSRC_DISK", "mode": "stat", "checksum_fraction": 0.5}
        made = client.post("/api/consistency/checks/", body, content_type="application/json")
        assert made.status_code == 201, (role, made.content)
        check = ConsistencyCheck.objects.get(pk=made.json()["id"])
        assert (check.mode, check.checksum_fraction, check.requested_by) == ("stat", 0.5, user.username), role
        decisions = {}
        for decision in ("remove", "keep"):
            relative = f"dark/{unique(decision)}/stray.ms"
            put_file(site, relative, 100)
            finding = Finding.objects.create(
                check_run=check, kind=FindingKind.DARK, path=relative, found_size=100
            )
            answer = client.post(f"/api/consistency/findings/{finding.pk}/{decision}/")
            assert answer.status_code == 200, (role, decision, answer.content)
            finding.refresh_from_db()
            decisions[decision] = (finding.action, site.local_path(f"srcnet/{relative}").exists())
        assert decisions == {"remove": (FindingAction.REMOVED, False), "keep": (FindingAction.KEPT, True)}, (
            role
        )
        # The next role's check may start once this one has ended (one check per endpoint at a time).
        ConsistencyCheck.objects.filter(pk=check.pk).update(state=CheckState.COMPLETE)


def test_every_write_operation_is_proven():
    assert set(OPERATIONS) - PROVEN == set(), (
        "write operations no test here proves for the roles allowed them"
    )
