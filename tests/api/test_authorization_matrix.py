"""Who may do what, tested as a matrix: every write operation of the OpenAPI schema, every FTS3 endpoint and
every portal form, for each role (anonymous, scientist, operator, admin), with the answer each must get.

The roles are srcnet.roles': a scientist reads (and asks for data through rules), an operator changes the
network's state, an admin also manages users, tokens and the transfer service's configuration. A denied
request never reaches the view: the answer is the same whether the object named exists or not, so the
matrix uses ids that do not exist and bodies that are empty, and nothing changes state."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from drf_spectacular.generators import SchemaGenerator

from identity.tokens import issue
from srcnet.roles import Role, grant_submit_transfers
from tests.conftest import register_storage
from transfers.models import TransferJob

pytestmark = pytest.mark.django_db

ROLES = (Role.ANONYMOUS, Role.SCIENTIST, Role.OPERATOR, Role.ADMIN)
WRITE_METHODS = ("post", "put", "patch", "delete")
# The transfer service's configuration (FTS3 keeps /config to its "config" role).
ADMIN_ONLY = (
    "/api/transfers/link-limits/",
    "/api/transfers/storage-limits/",
    "/api/transfers/activity-shares/",
)
# Anyone may ask for a token with a username and a password.
OPEN = ("/api/token/",)
# Any account makes and removes its own rules and API tokens (another's is a 404, as if it did not exist).
ANY_ACCOUNT = ("/api/rules/", "/api/identity/tokens/")


def required_role(path: str) -> Role:
    if path.startswith(OPEN):
        return Role.ANONYMOUS
    if path.startswith(ADMIN_ONLY):
        return Role.ADMIN
    if path.startswith(ANY_ACCOUNT):
        return Role.SCIENTIST
    return Role.OPERATOR


def write_operations() -> list[tuple[str, str]]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return sorted(
        (path, method) for path, item in schema["paths"].items() for method in item if method in WRITE_METHODS
    )


def concrete(path: str) -> str:
    """A schema path with its parameters filled by values that name nothing."""
    return re.sub(
        r"\{(\w+)\}",
        lambda m: str(uuid.uuid4()) if "id" in m.group(1) and "job" in m.group(1) else "987654",
        path,
    )


def account(role: Role):  # type: ignore[no-untyped-def]
    if role == Role.ANONYMOUS:
        return None
    return get_user_model().objects.create_user(
        f"user-{role.name.lower()}",
        password="pw",
        is_staff=role >= Role.OPERATOR,
        is_superuser=role >= Role.ADMIN,
    )


def api_client(role: Role) -> Client:
    user = account(role)
    if user is None:
        return Client()
    key = issue(user, name="test", scope="operate")[1]
    return Client(HTTP_AUTHORIZATION=f"Bearer {key}")


OPERATIONS = write_operations()


def test_the_schema_has_the_write_operations_the_matrix_walks():
    paths = {p for p, _ in OPERATIONS}
    assert len(OPERATIONS) >= 30
    assert {"/api/transfers/jobs/", "/api/transfers/link-limits/", "/api/topology/links/"} <= paths


@pytest.mark.parametrize("role", ROLES, ids=lambda r: r.name.lower())
def test_every_api_write_operation_answers_each_role_as_the_matrix_says(role):
    client = api_client(role)
    wrong = []
    for path, method in OPERATIONS:
        response = getattr(client, method)(concrete(path), data="{}", content_type="application/json")
        needed = required_role(path)
        if role >= needed:
            ok = response.status_code not in (401, 403) and response.status_code < 500
        else:
            ok = response.status_code == (401 if role == Role.ANONYMOUS else 403)
        if not ok:
            wrong.append(f"{method.upper()} {path}: {response.status_code} (needs {needed.name.lower()})")
    assert not wrong, "\n".join(wrong)


# --- the FTS3 endpoint ------------------------------------------------------------------------------------

SUBMISSION = {"files": [{"sources": ["root://a:1//x"], "destinations": ["root://b:1//x"]}]}
LINK = {"symbolicname": "ab", "source": "root://a:1", "destination": "root://b:1", "max_active": 3}


def fts_client(user) -> Client:  # type: ignore[no-untyped-def]
    if user is None:
        return Client()
    key = issue(user, name="test", scope="fts3")[1]
    return Client(HTTP_AUTHORIZATION=f"Bearer {key}")


@pytest.fixture
def fts_roles():  # type: ignore[no-untyped-def]
    register_storage("root://a:1", "root://b:1")
    users = {role: account(role) for role in ROLES}
    service = get_user_model().objects.create_user("rucio-conveyor")
    grant_submit_transfers(service)
    return users, service


# (method, path, body): the expected status per role: anonymous, scientist, operator, admin, service.
FTS3_MATRIX = [
    ("get", "/fts3/", None, (401, 200, 200, 200, 200)),
    ("get", "/fts3/whoami", None, (401, 200, 200, 200, 200)),
    ("get", "/fts3/delegation/abc", None, (401, 200, 200, 200, 200)),
    ("get", "/fts3/jobs", None, (401, 200, 200, 200, 200)),
    ("post", "/fts3/jobs", SUBMISSION, (401, 403, 200, 200, 200)),
    # FTS3's configuration API is its "config" role's: the admin (and an account granted
    # transfers.configure_transfers, tests/fts3/test_config_api.py), not a submitting service.
    ("post", "/fts3/config/links", LINK, (401, 403, 403, 201, 403)),
    ("get", "/fts3/config/links", None, (401, 403, 403, 200, 403)),
    ("get", "/fts3/config/links/nothing", None, (401, 403, 403, 404, 403)),
    ("delete", "/fts3/config/links/nothing", None, (401, 403, 403, 204, 403)),
    (
        "post",
        "/fts3/config/se",
        {"root://a:1": {"se_info": {"inbound_max_active": 3}}},
        (401, 403, 403, 200, 403),
    ),
    ("get", "/fts3/config/se", None, (401, 403, 403, 200, 403)),
    ("delete", "/fts3/config/se?se=root://a:1", None, (401, 403, 403, 204, 403)),
    ("post", "/fts3/config/activity_shares", {"vo": "ska", "share": {"x": 1}}, (401, 403, 403, 200, 403)),
    ("get", "/fts3/config/activity_shares", None, (401, 403, 403, 200, 403)),
    ("delete", "/fts3/config/activity_shares/ska", None, (401, 403, 403, 404, 403)),
]


@pytest.mark.parametrize(("method", "path", "body", "expected"), FTS3_MATRIX)
def test_fts3_endpoints_answer_each_role(fts_roles, method, path, body, expected):
    users, service = fts_roles
    for who, status in zip([*users.values(), service], expected, strict=True):
        client = fts_client(who)
        if body is None:
            response = getattr(client, method)(path)
        else:
            response = getattr(client, method)(path, body, content_type="application/json")
        assert response.status_code == status, (who, method, path, response.content[:300])


def test_fts3_jobs_are_seen_and_cancelled_by_their_submitter_and_operators_only(fts_roles):
    users, service = fts_roles
    job_id = (
        fts_client(service).post("/fts3/jobs", SUBMISSION, content_type="application/json").json()["job_id"]
    )
    other = get_user_model().objects.create_user("another-service")
    grant_submit_transfers(other)
    for who, visible in (
        (users[Role.SCIENTIST], False),
        (other, False),
        (service, True),
        (users[Role.OPERATOR], True),
    ):
        client = fts_client(who)
        assert (client.get(f"/fts3/jobs/{job_id}").status_code == 200) is visible, who
        assert (job_id in {j["job_id"] for j in client.get("/fts3/jobs").json()}) is visible, who
    for who in (users[Role.SCIENTIST], other):
        client = fts_client(who)
        assert client.delete(f"/fts3/jobs/{job_id}").status_code == 404
        reprioritise = client.post(
            f"/fts3/jobs/{job_id}", {"params": {"priority": 5}}, content_type="application/json"
        )
        assert reprioritise.status_code == 404
    job = TransferJob.objects.get(job_id=job_id)
    assert job.state == "SUBMITTED" and job.priority == 3
    assert fts_client(service).delete(f"/fts3/jobs/{job_id}").status_code == 200
    assert TransferJob.objects.get(job_id=job_id).state == "CANCELED"


# --- portal forms -----------------------------------------------------------------------------------------

# Every page of the portal is read from the URL configuration (tests below), so a page added later must be
# named here: its forms are an operator's, any account's (its own rules), or it has none (read-only). Ids in
# the URLs name nothing: a denied request never reaches the view.
OPERATOR_FORMS = {
    "operations:pause-path",
    "operations:resume-path",
    "operations:job-priority",
    "operations:job-cancel",
    "operations:product-priority",
    "operations:product-reroute",
    "operations:policy-new",
    "operations:policy-edit",
    "campaigns:new",
    "campaigns:action",
    "schedulers:simulations",
    # Storage consistency (operators only, reading too: a check's findings name every file at a site).
    "consistency:checks",
    "consistency:check",
    "consistency:start",
    "consistency:dark-file",
}
ANY_ACCOUNT_FORMS = {"rules:list", "rules:remove"}
READ_ONLY = {
    "topology:map",
    "topology:sites",
    "topology:links",
    "topology:paths",
    "topology:storage",
    "replicas:products",
    "replicas:product",
    "transfers:files",
    "transfers:flows",
    "schedulers:cycles",
    "schedulers:cycle",
    "schedulers:simulation",
    "schedulers:simulation-file",
    "operations:audit",
    "operations:policies",
    "campaigns:list",
    "campaigns:detail",
    "campaigns:score",
    "campaigns:file",
}
# Not the portal's pages: the sign-in pages (single sign-on's too), the landing redirect, Prometheus'
# /metrics (its own token).
OUTSIDE = {"home", "login", "logout", "metrics", "sso-login", "sso-callback"}
URL_VALUES = {"int": "987654", "uuid": str(uuid.UUID(int=7)), "action": "stop", "filename": "report.json"}


def portal_pages() -> dict[str, str]:
    """Every named page of the portal (not /api/, /fts3/, /admin/) -> a URL of it, read from the URL
    configuration."""
    from django.urls import URLPattern, URLResolver, get_resolver

    pages: dict[str, str] = {}

    def walk(patterns, prefix: str, namespace: str) -> None:  # type: ignore[no-untyped-def]
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                inner = (
                    f"{namespace}:{pattern.namespace}"
                    if namespace and pattern.namespace
                    else (pattern.namespace or namespace)
                )
                walk(pattern.url_patterns, prefix + str(pattern.pattern), inner)
            elif isinstance(pattern, URLPattern) and pattern.name:
                route = prefix + str(pattern.pattern)
                if route.startswith(("api/", "fts3/", "admin/")):
                    continue

                def value(match: re.Match[str]) -> str:
                    converter, name = match.group(1), match.group(2)
                    return URL_VALUES.get(name) or URL_VALUES.get(converter) or "x"

                url = "/" + re.sub(r"<(?:(\w+):)?(\w+)>", value, route)
                pages[f"{namespace}:{pattern.name}" if namespace else pattern.name] = url

    walk(get_resolver().url_patterns, "", "")
    return pages


PAGES = portal_pages()
PORTAL_FORMS = sorted(PAGES[name] for name in OPERATOR_FORMS)


def test_every_portal_page_is_in_the_matrix():
    listed = OPERATOR_FORMS | ANY_ACCOUNT_FORMS | READ_ONLY | OUTSIDE
    assert set(PAGES) - listed == set(), "portal pages the matrix does not place"
    assert listed - set(PAGES) == set(), "names the matrix places that the portal no longer has"
    assert "rules:list" in PAGES and "campaigns:action" in PAGES


def portal_client(role: Role, *, csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=csrf)
    user = account(role)
    if user is not None:
        client.force_login(user)
    return client


@pytest.mark.parametrize("role", ROLES, ids=lambda r: r.name.lower())
def test_every_portal_form_answers_each_role(role):
    client = portal_client(role)
    wrong = []
    for name, url in sorted(PAGES.items()):
        if name in OUTSIDE:
            continue
        response = client.post(url, {})
        if role == Role.ANONYMOUS:
            ok = response.status_code == 302 and response["Location"].startswith("/login/")
        elif name in OPERATOR_FORMS and role == Role.SCIENTIST:
            ok = response.status_code == 403
        else:
            # Allowed: the form answers about its (empty) input or the object it names (none), never
            # refuses the account, never fails.
            ok = response.status_code not in (401, 403) and response.status_code < 500
        if not ok:
            wrong.append(f"POST {url} ({name}): {response.status_code}")
    assert not wrong, "\n".join(wrong)


def test_portal_forms_refuse_a_post_without_the_csrf_token():
    client = portal_client(Role.OPERATOR, csrf=True)
    for url in PORTAL_FORMS:
        response = client.post(url, {})
        assert response.status_code == 403 and b"CSRF" in response.content, url
    # With the token from the form's page, the same form is accepted (it answers about the input instead).
    page = client.get("/campaigns/new/")
    token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page.content)
    assert token is not None
    answered = client.post("/campaigns/new/", {"csrfmiddlewaretoken": token.group(1).decode()})
    assert answered.status_code == 200 and b"This field is required" in answered.content


def test_user_management_is_the_admins():
    for role, status in ((Role.SCIENTIST, 302), (Role.OPERATOR, 403), (Role.ADMIN, 200)):
        client = portal_client(role)
        response = client.get("/admin/auth/user/add/")
        assert response.status_code == status, role
        listed = client.get("/admin/identity/apitoken/")
        assert listed.status_code == status, role


def test_a_body_nested_thousands_deep_is_a_400_on_every_write_operation():
    client = api_client(Role.ADMIN)
    deep = b"[" * 5000 + b"]" * 5000
    wrong = []
    for path, method in OPERATIONS:
        response = getattr(client, method)(concrete(path), data=deep, content_type="application/json")
        if response.status_code >= 500:
            wrong.append(f"{method.upper()} {path}: {response.status_code}")
    assert not wrong, "\n".join(wrong)


# --- success, not only "not refused" ----------------------------------------------------------------------
# The operator forms with an effect in the database, posted as each logged-in role with valid input: an
# allowed role's request does what it says (and is audited), a refused one changes nothing.


@pytest.mark.parametrize("role", [Role.SCIENTIST, Role.OPERATOR, Role.ADMIN], ids=lambda r: r.name.lower())
def test_each_allowed_role_succeeds_at_the_operator_forms_and_others_change_nothing(reference_topology, role):  # type: ignore[no-untyped-def]
    from operations.models import AuditEvent
    from tests.portal.helpers import job_of, pushed_product
    from topology.models import NetworkPath
    from transfers.models import LinkPause

    allowed = role >= Role.OPERATOR
    client = portal_client(role)
    path = NetworkPath.objects.get(source__name="SKA1-Mid", destination__name="UKSRC", is_computed=True)
    job = job_of(pushed_product("obs-matrix"))

    paused = client.post(f"/operations/paths/{path.pk}/pause/", {"confirm": "on", "reason": "fibre work"})
    assert paused.status_code == (302 if allowed else 403)
    assert LinkPause.objects.exists() is allowed
    prioritised = client.post(f"/operations/jobs/{job.job_id}/priority/", {"priority": "5", "confirm": "on"})
    assert prioritised.status_code == (302 if allowed else 403)
    job.refresh_from_db()
    assert (job.priority == 5) is allowed
    cancelled = client.post(f"/operations/jobs/{job.job_id}/cancel/", {"confirm": "on", "reason": "test"})
    assert cancelled.status_code == (302 if allowed else 403)
    job.refresh_from_db()
    assert (job.state == "CANCELED") is allowed
    actions = set(AuditEvent.objects.values_list("action", flat=True))
    assert actions == ({"pause_path", "job_priority", "cancel_job"} if allowed else set())


# The forms the two tests above and below post, with valid input, as each role (kept beside them: a form
# added to the portal and not to them fails test_every_portal_form_is_proven_for_its_allowed_roles).
PORTAL_PROVEN = {
    "operations:pause-path",
    "operations:job-priority",
    "operations:job-cancel",
    "operations:resume-path",
    "operations:product-priority",
    "operations:product-reroute",
    "operations:policy-new",
    "operations:policy-edit",
    "campaigns:new",
    "campaigns:action",
    "schedulers:simulations",
    "rules:list",
    "rules:remove",
    "consistency:checks",
    "consistency:check",
    "consistency:start",
    "consistency:dark-file",
}


@pytest.mark.parametrize("role", [Role.SCIENTIST, Role.OPERATOR, Role.ADMIN], ids=lambda r: r.name.lower())
def test_each_allowed_role_starts_storage_checks_and_decides_on_dark_files(reference_topology, role):  # type: ignore[no-untyped-def]
    """The storage checks' pages and forms: operators read them, start a check (its task is queued once the
    transaction commits, which this test's never does) and keep a dark file, audited; a scientist gets 403
    and changes nothing. (A dark file's removal acts on real storage: tests/consistency.)"""
    from consistency.models import ConsistencyCheck, Finding
    from operations.models import AuditEvent
    from topology.models import StorageEndpoint

    allowed = role >= Role.OPERATOR
    expected = 302 if allowed else 403
    client = portal_client(role)
    assert client.get("/storage-checks/").status_code == (200 if allowed else 403)
    body = {"endpoint": "UKSRC_DISK", "mode": "list", "checksum_fraction": "0.5", "dark_grace_hours": "12"}
    answer = client.post("/storage-checks/new/", body)
    assert answer.status_code == expected, answer.content.decode()[-800:]
    check = ConsistencyCheck.objects.filter(endpoint__name="UKSRC_DISK").first()
    assert (check is not None) is allowed
    if check is None:
        check = ConsistencyCheck.objects.create(endpoint=StorageEndpoint.objects.get(name="UKSRC_DISK"))
    else:
        assert (check.checksum_fraction, check.dark_grace_seconds) == (0.5, 12 * 3600)
    dark = Finding.objects.create(check_run=check, kind="dark", path="ska/stray/x.ms", found_size=1)
    assert client.get(f"/storage-checks/{check.pk}/").status_code == (200 if allowed else 403)
    assert client.post(f"/storage-checks/findings/{dark.pk}/keep/", {"confirm": "on"}).status_code == expected
    dark.refresh_from_db()
    assert (dark.action == "kept") is allowed
    actions = set(AuditEvent.objects.values_list("action", flat=True))
    assert actions == ({"check_storage", "keep_dark_file"} if allowed else set())


@pytest.mark.parametrize("role", [Role.SCIENTIST, Role.OPERATOR, Role.ADMIN], ids=lambda r: r.name.lower())
def test_each_allowed_role_succeeds_at_the_other_portal_forms_and_others_change_nothing(  # type: ignore[no-untyped-def]
    reference_topology, role, settings, tmp_path
):
    """The rest of the portal's forms, as the previous test: each with valid input, its change checked in
    the database for the roles allowed it, and nothing changed for the others."""
    from campaigns.models import Campaign
    from operations.models import AuditEvent
    from replicas.choices import ReplicaState
    from replicas.models import ReplicaPolicy
    from rules.models import Rule
    from schedulers.models import Simulation
    from tests.campaigns.inputs import GOOD
    from tests.portal.helpers import job_of, pushed_product, start
    from topology.models import NetworkPath, StorageEndpoint, Telescope
    from transfers.models import LinkPause

    settings.SRCNET_REPORTS_DIR = tmp_path
    allowed = role >= Role.OPERATOR
    expected = 302 if allowed else 403
    client = portal_client(role)
    wrong = []

    def check(name: str, answer: Any, effect: bool) -> None:
        if answer.status_code != expected or effect is not allowed:
            wrong.append(f"{name}: {answer.status_code}, effect {effect}")

    # resume-path: a path paused by an operator before.
    path = NetworkPath.objects.get(source__name="SKA1-Mid", destination__name="UKSRC", is_computed=True)
    helper = Client()  # an operator of its own, for what must exist before the role's request
    helper.force_login(get_user_model().objects.create_user("helper-op", is_staff=True))
    helper.post(f"/operations/paths/{path.pk}/pause/", {"confirm": "on", "reason": "work"})
    answer = client.post(f"/operations/paths/{path.pk}/resume/", {"confirm": "on"})
    check("operations:resume-path", answer, not LinkPause.objects.exists())
    # product-priority and product-reroute: a product on its way.
    product = pushed_product("obs-forms")
    answer = client.post(f"/operations/products/{product.pk}/priority/", {"priority": "1", "confirm": "on"})
    product.refresh_from_db()
    check("operations:product-priority", answer, product.priority == 1 and job_of(product).priority == 1)
    moving = product.replicas.get(state=ReplicaState.COPYING)
    start(job_of(product))
    target = StorageEndpoint.objects.exclude(pk=moving.endpoint_id).filter(
        name__in=["UKSRC_DISK", "FRSRC_DISK"]
    )[0]
    # Not executing the on-commit callbacks: they queue a push cycle, which a real Celery worker of this
    # process (another test's) would run on the test database, leaving rows that outlive this test (a whole
    # run counted two extra push cycles in two later tests).
    answer = client.post(
        f"/operations/products/{product.pk}/reroute/",
        {"destination": target.pk, "confirm": "on", "reason": "x"},
    )
    check("operations:product-reroute", answer, product.replicas.filter(endpoint=target).exists())
    # policy-new and policy-edit.
    low = Telescope.objects.get(name="SKA1-Low")
    form = {
        "name": f"pol-{role.name.lower()}",
        "telescope": low.pk,
        "kind": "weighted_share",
        "description": "",
        "shares-TOTAL_FORMS": "1",
        "shares-INITIAL_FORMS": "0",
        "shares-MIN_NUM_FORMS": "0",
        "shares-MAX_NUM_FORMS": "1000",
        "shares-0-destination": target.pk,
        "shares-0-weight": "2",
    }
    answer = client.post("/operations/policies/new/", form)
    made = ReplicaPolicy.objects.filter(name=form["name"]).first()
    check("operations:policy-new", answer, made is not None)
    if made is None:
        helper.post("/operations/policies/new/", {**form, "name": "by-helper"})
    policy = made or ReplicaPolicy.objects.get(name="by-helper")
    answer = client.post(f"/operations/policies/{policy.pk}/", {**form, "description": "edited"})
    policy.refresh_from_db()
    check("operations:policy-edit", answer, policy.description == "edited")
    # campaigns:new and campaigns:action (stop).
    campaign_form = {
        **GOOD,
        "name": f"dc-{role.name.lower()}",
        "sources": "SKA1-Low",
        "destinations": "UKSRC_DISK",
        "scenario": "one_replica",
        "topology": "db",
        "files_per_product": 1,
        "ramp_seconds": 0,
    }
    answer = client.post("/campaigns/new/", campaign_form)
    campaign = Campaign.objects.filter(name=campaign_form["name"]).first()
    check("campaigns:new", answer, campaign is not None)
    if campaign is None:
        helper.post("/campaigns/new/", {**campaign_form, "name": "by-helper"})
    campaign = campaign or Campaign.objects.get(name="by-helper")
    answer = client.post(f"/campaigns/{campaign.pk}/stop/")
    campaign.refresh_from_db()
    check("campaigns:action", answer, campaign.state == Campaign.State.STOPPED)
    # schedulers:simulations: a simulation asked for (its run is the worker's).
    answer = client.post(
        "/scheduler/simulations/", {"scenario": "one_replica", "days": "0.05", "topology": "reference"}
    )
    check("schedulers:simulations", answer, Simulation.objects.exists())
    audited = {"resume_path", "product_priority", "reroute_product", "edit_policy"}
    if allowed and not audited <= set(AuditEvent.objects.values_list("action", flat=True)):
        wrong.append(
            f"audit trail lacks {audited - set(AuditEvent.objects.values_list('action', flat=True))}"
        )
    assert not wrong, "\n".join(wrong)
    # rules:list and rules:remove are any account's: each role makes and removes its own rule.
    made_rule = client.post(
        "/rules/",
        {"product": "ska:obs-forms", "srcs": "AUSRC", "copies": 1, "priority": 3,
         "activity": "SKA User Request", "lifetime": 7},
    )  # fmt: skip
    rule = Rule.objects.filter(owner__username=f"user-{role.name.lower()}").first()
    assert made_rule.status_code == 302 and rule is not None, made_rule.content.decode()[-1500:]
    assert (
        client.post(f"/rules/{rule.pk}/remove/").status_code == 302
        and not Rule.objects.filter(pk=rule.pk).exists()
    )


def test_every_portal_form_is_proven_for_its_allowed_roles():
    """Each form of the portal (read from the URL configuration) is among those the two tests prove."""
    assert set() == (OPERATOR_FORMS | ANY_ACCOUNT_FORMS) - PORTAL_PROVEN
