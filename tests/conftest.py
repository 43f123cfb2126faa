"""Shared fixtures: API clients with tokens, real XRootD sites, a real Celery worker on the test database.

`make test` (python -m localnet test) starts PostgreSQL and Redis for the ``test`` state before pytest
starts, so Django's settings find them; XRootD sites and the worker are started here, on demand."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest
from django.conf import settings
from rest_framework.test import APIClient

from identity.tokens import issue
from localnet.binding import ensure_token_site
from localnet.issuer import LocalIssuer, ensure_issuer, local_audience, stop_issuer
from localnet.processes import pid_file, stop_pid
from localnet.stack import platform_process, spawn_platform_process, wait_for_worker, worker_argv
from localnet.state import PROJECT_ROOT, StateDir
from localnet.users import chown_tree
from localnet.xrootd import SERVICE_USER, LocalSite, stop_site
from tests import topology_snapshot

REFERENCE_TOPOLOGY = PROJECT_ROOT / "topology" / "data" / "reference.yaml"
ARTIFACTS = PROJECT_ROOT / "test-artifacts"


@pytest.fixture(scope="session", autouse=True)
def _flush_survives_a_deadlock() -> Iterator[None]:
    """A transactional test ends with Django's flush, one TRUNCATE of every table. The session's Celery
    worker may still be running a task left by an earlier test (a retry after its back-off) and read two
    of those tables inside one transaction; PostgreSQL then finds a deadlock and aborts one side, and if
    that is the TRUNCATE the next test starts on the rows of the last (CI, stop 20: "deadlock detected",
    then "Storage endpoint with this Name already exists"). PostgreSQL's advice for a deadlock is to run
    the transaction again, which is what this does, a few times; any other error is raised at once."""
    from django.db import OperationalError
    from django.db.backends.postgresql.operations import DatabaseOperations

    plain = DatabaseOperations.execute_sql_flush

    def flush_again_after_a_deadlock(self, sql_list):  # type: ignore[no-untyped-def]
        for attempt in range(5):
            try:
                return plain(self, sql_list)
            except OperationalError as error:
                if "deadlock detected" not in str(error) or attempt == 4:
                    raise
                time.sleep(0.2 * (attempt + 1))

    DatabaseOperations.execute_sql_flush = flush_again_after_a_deadlock  # type: ignore[method-assign]
    yield
    DatabaseOperations.execute_sql_flush = plain  # type: ignore[method-assign]


# Tests that share an expensive set-up run in one pytest-xdist worker (``--dist loadgroup``), so it is set
# up once per run rather than once per worker: the booted hosts, the Rucio server and its daemons, the
# browser, the fault-injection sites and the long-haul network each make a group (the last two are set up
# per module, but their modules also share the fault worker and the emulator's CPU, so they are kept
# together); a module with another module-wide fixture of its own (XRootD servers started for that module)
# is a group of its own. Every other test goes to whichever worker is free. The groups with the most tests
# are handed out first, those holding an exclusive test last (tests/worker_stack.py).
SHARED_SETUPS = {
    "deployment": "booted-hosts",
    "rucio_server": "rucio",
    "browser": "browser",
    "fault_sites": "faults",
    "long_haul": "long-haul",
    "strace_alone": "strace",
}


def shared_setup_group(item: pytest.Item) -> str | None:
    """The xdist group ``item`` must run in, or None when any worker may run it."""
    fixtures = set(getattr(item, "fixturenames", ()))
    for fixture, group in SHARED_SETUPS.items():
        if fixture in fixtures:
            return group
    definitions = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    for name in fixtures:
        for definition in definitions.get(name, ()):
            if definition.scope == "module" and definition.func.__module__.startswith("tests."):
                return item.nodeid.split("::")[0]
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from tests.worker_stack import record_groups

    groups = {item.nodeid: group for item in items if (group := shared_setup_group(item))}
    exclusive = [item.nodeid for item in items if item.get_closest_marker("exclusive")]
    record_groups(groups, exclusive)


@pytest.fixture(scope="session", autouse=True)
def _fast_password_hashing() -> Iterator[None]:
    """The tests' users get their passwords hashed by a fast hasher: the production hasher (PBKDF2, a
    million rounds) costs a quarter of a second per user, minutes over the suite, and no test is about
    its cost. Login still checks the password (tests/browser log in through the form)."""
    from django.test.utils import override_settings

    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield


@pytest.fixture(autouse=True)
def _signals_stay_deliverable() -> Iterator[None]:
    """No test leaves signals blocked in the test process: every process it starts afterwards would inherit
    the mask and ignore SIGTERM and Ctrl-C (a gfal2 context did that, transfers/gfal_context.py; in a
    whole run it left a Celery beat running past its test and a SIGTERMed path owner alive)."""
    import signal

    before = signal.pthread_sigmask(signal.SIG_BLOCK, ())
    yield
    after = signal.pthread_sigmask(signal.SIG_SETMASK, before)
    left = sorted(getattr(s, "name", str(s)) for s in after - before)
    assert not left, f"the test left signals blocked: {left}"


@pytest.fixture(scope="session")
def test_state() -> StateDir:
    return StateDir.named(os.environ.get("SRCNET_STATE", "test"))


@pytest.fixture
def operator(django_user_model):  # type: ignore[no-untyped-def]
    return django_user_model.objects.create_user("op", password="op", is_staff=True)


@pytest.fixture
def site_admin(django_user_model):  # type: ignore[no-untyped-def]
    """The admin role (users, tokens, the transfer service's configuration); pytest-django's admin_user
    is a different fixture."""
    return django_user_model.objects.create_user("adm", password="adm", is_staff=True, is_superuser=True)


@pytest.fixture
def scheduler_account(django_user_model):  # type: ignore[no-untyped-def]
    """The push scheduler's service account at an FTS3 endpoint, as a deployment sets it up: it submits and
    follows its own jobs and sets link limits (transfers.submit_transfers, transfers.configure_transfers),
    and is neither operator nor admin."""
    from srcnet.roles import grant_configure_transfers, grant_submit_transfers

    user = django_user_model.objects.create_user("push-scheduler", password="push-scheduler")
    grant_submit_transfers(user)
    grant_configure_transfers(user)
    return user


@pytest.fixture
def scientist(django_user_model):  # type: ignore[no-untyped-def]
    return django_user_model.objects.create_user("sci", password="sci")


def _client_for(user) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    key = issue(user, name="test", scope="operate")[1]
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


@pytest.fixture
def operator_client(operator) -> APIClient:  # type: ignore[no-untyped-def]
    return _client_for(operator)


@pytest.fixture
def site_admin_client(site_admin) -> APIClient:  # type: ignore[no-untyped-def]
    return _client_for(site_admin)


@pytest.fixture
def scientist_client(scientist) -> APIClient:  # type: ignore[no-untyped-def]
    return _client_for(scientist)


@pytest.fixture
def reference_topology(db):  # type: ignore[no-untyped-def]
    """The reference topology in this test's transaction (imported once a process, then restored:
    tests/topology_snapshot.py)."""
    return topology_snapshot.reference_topology(REFERENCE_TOPOLOGY)


@pytest.fixture
def topology(transactional_db):  # type: ignore[no-untyped-def]
    """The reference topology committed (``transactional_db``), for tests whose other processes or threads
    (a live server, the CLI's web server) must see it; flushed after the test."""
    return topology_snapshot.reference_topology(REFERENCE_TOPOLOGY)


@pytest.fixture(scope="session")
def token_issuer(test_state: StateDir) -> Iterator[LocalIssuer]:
    """The state's token issuer, a real Keycloak (localnet/issuer.py). Every local site of the tests
    enforces its tokens, and the platform's processes of the session ask it for their copies' tokens: the
    Celery workers and services started from now on (their environment, localnet/stack.py token_env) and
    this process, for the copies and checks it makes itself (SRCNET_TOKENS)."""
    issuer = ensure_issuer(test_state)
    before = settings.SRCNET_TOKENS
    settings.SRCNET_TOKENS = {**before, **issuer.settings().as_setting()}
    try:
        yield issuer
    finally:
        settings.SRCNET_TOKENS = before
        stop_issuer(test_state)


def token_site(state: StateDir, issuer: LocalIssuer, name: str, **options: object) -> LocalSite:
    """A local site enforcing ``issuer``'s tokens (localnet/binding.py ensure_token_site), its /srcnet
    folder the server's (it makes the copies' folders below it)."""
    site = ensure_token_site(state, issuer, name, **options)  # type: ignore[arg-type]
    base = site.local_path("/srcnet/")
    base.mkdir(parents=True, exist_ok=True)
    chown_tree(base, SERVICE_USER)
    return site


def site_token(issuer: LocalIssuer, site: LocalSite, *scopes: str) -> str:
    """A token with ``scopes`` (paths below /srcnet) for the token-enforcing local ``site`` (its audience),
    from ``issuer``'s transfer client: what a test that reads or writes a site itself presents."""
    from transfers.tokens import TokenClient

    assert site.audience, f"site {site.name} enforces no token"
    return TokenClient(issuer.settings()).fetch(list(scopes), site.audience).value


@pytest.fixture(scope="session")
def xrootd_sites(test_state: StateDir, token_issuer: LocalIssuer) -> Iterator[dict[str, LocalSite]]:
    """Three real XRootD servers: a telescope SDP and two SRCs, each serving nobody without a token."""
    names = ["SKA1-LOW_SDP", "UKSRC_DISK", "AUSRC_DISK"]
    sites = {name: token_site(test_state, token_issuer, name) for name in names}
    yield sites
    for name in names:
        stop_site(test_state, name)


def register_local_sites(sites: dict[str, LocalSite]) -> None:
    """Register each running local site as a storage endpoint, so the transfer service accepts its URLs."""
    from topology.models import RegionalCentre, StorageEndpoint

    centre, _ = RegionalCentre.objects.get_or_create(
        name="LocalSites", defaults={"region": "europe", "country": "GB", "latitude": 0, "longitude": 0}
    )
    for name, site in sites.items():
        StorageEndpoint.objects.get_or_create(
            name=f"LOCAL-{name}".upper(),
            defaults={
                "site": centre,
                "hostname": "127.0.0.1",
                "root_port": site.root_port,
                "http_port": site.http_port,
                "prefix": "/srcnet/",
                # The site's own audience (token_site): the endpoint's name is not the site's.
                "token_audience": local_audience(name),
            },
        )


@pytest.fixture(autouse=True)
def _local_sites_are_registered(request):  # type: ignore[no-untyped-def]
    """A test that uses the local sites without a topology of its own gets them registered."""
    names = set(request.fixturenames)
    if "xrootd_sites" not in names or names & {"reference_topology", "bound_topology"}:
        return
    if not (names & {"db", "transactional_db"} or request.node.get_closest_marker("django_db")):
        return
    register_local_sites(request.getfixturevalue("xrootd_sites"))


@pytest.fixture
def https_fts3(test_state, django_db_setup):  # type: ignore[no-untyped-def]
    """The standalone FTS3 service over HTTPS (gunicorn, as a production FTS3 runs), on the test database;
    stopped (by its PID) after the test."""
    from localnet.fts3 import ensure_fts3
    from localnet.processes import stop_daemon

    url = ensure_fts3(
        test_state,
        test_state.path.name,
        env_overrides={"SRCNET_DB_NAME": str(settings.DATABASES["default"]["NAME"])},
    )
    yield url
    stop_daemon(test_state, "fts3")


@pytest.fixture(scope="session")
def celery_worker(django_db_setup, django_db_blocker, test_state: StateDir, token_issuer) -> Iterator[int]:  # type: ignore[no-untyped-def]
    """A real Celery worker process running the transfer tasks against the test database, asking the
    session's issuer for its copies' tokens (its environment, localnet/stack.py token_env)."""
    # As the platform runs it: the unprivileged service account (when the tests run as root).
    env, account = platform_process(test_state, test_state.path.name)
    env["SRCNET_DB_NAME"] = str(settings.DATABASES["default"]["NAME"])
    env["SRCNET_TRANSFER_RETRY_BACKOFF"] = "0.5"
    # The tests drive the push loop's cycles themselves (with the transfertool they choose), so the worker
    # does not start cycles of its own when a push job ends; the demo's worker does (tests/demo).
    env["SRCNET_PUSH_ON_SETTLE"] = "0"
    log = test_state.sub("log") / "pytest-celery-worker.log"
    proc = spawn_platform_process(worker_argv(f"pytest-{os.getpid()}@%h"), env, account, log)
    # Recorded in the state, so that `localnet down` stops it even when this process dies first.
    recorded = pid_file(test_state, "pytest-celery-worker")
    recorded.write_text(f"{proc.pid}\n")
    try:
        wait_for_worker(proc, log)
        yield proc.pid
    finally:
        stop_pid(proc.pid, timeout=20)
        recorded.unlink(missing_ok=True)


def policy_of_shares(shares: dict[str, float], *, telescope: str = "SKA1-Low", name: str = ""):  # type: ignore[no-untyped-def]
    """The telescope's active policy from now on: its products go to the storage endpoints named in
    ``shares`` (endpoint -> weight) and nowhere else; the telescope's other policies are deactivated."""
    import uuid

    from replicas.models import PolicyShare, ReplicaPolicy
    from topology.models import StorageEndpoint, Telescope

    site = Telescope.objects.get(name=telescope)
    ReplicaPolicy.objects.filter(telescope=site).update(is_active=False)
    policy = ReplicaPolicy.objects.create(name=name or f"to-{uuid.uuid4().hex[:8]}", telescope=site)
    for endpoint, weight in shares.items():
        PolicyShare.objects.create(
            policy=policy, destination=StorageEndpoint.objects.get(name=endpoint), weight=weight
        )
    return policy


def wait_until(predicate, *, timeout: float = 120.0, interval: float = 0.25, what: str = "condition"):  # type: ignore[no-untyped-def]
    """Poll ``predicate`` until it returns a truthy value; fail the test with ``what`` on time-out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout} s waiting for {what}")


def drive_push_loop(done, *, transfertool=None, timeout: float = 180.0, what: str = "the pushes"):  # type: ignore[no-untyped-def]
    """Run push cycles (as the beat and the freed lanes do in a deployment) until ``done()`` is truthy."""
    from schedulers.loop import push_cycle

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        cycle = push_cycle(transfertool=transfertool)
        assert not cycle.error, cycle.error
        value = done()
        if value:
            return value
        time.sleep(0.5)
    pytest.fail(f"timed out after {timeout} s driving the push loop for {what}")


def _worker_busy() -> int:
    """Tasks the test worker is running, holding or has scheduled, plus messages waiting in its queue."""
    from srcnet.celery import app

    inspector = app.control.inspect(timeout=1.0)
    busy = 0
    for answer in (inspector.active(), inspector.reserved(), inspector.scheduled()):
        busy += sum(len(tasks) for tasks in (answer or {}).values())
    with app.connection_for_read() as connection:
        busy += connection.default_channel.client.llen(settings.CELERY_TASK_DEFAULT_QUEUE)
    return busy


class IdleQueue:
    """A Celery queue of one test's own that no worker reads: what the test sends waits there."""

    def __init__(self, name: str) -> None:
        self.name = name

    def waiting(self, task: str | None = None) -> int:
        """The messages waiting (of ``task`` only, if named)."""
        import json

        from srcnet.task_queue import app

        with app.connection_for_read() as connection:
            messages = connection.default_channel.client.lrange(self.name, 0, -1)
        if task is None:
            return len(messages)
        return sum(json.loads(m)["headers"]["task"] == task for m in messages)


@pytest.fixture
def idle_queue() -> Iterator[IdleQueue]:
    """The tasks this test sends go to a queue of its own that no worker reads, deleted after. On the
    session's queue a worker would run them, writing rows while the test's flush empties the tables (CI,
    stop 44: the push-cycle benchmark's copies; the flush failed and the next test on that worker started on
    its rows)."""
    from srcnet.task_queue import app

    queue = IdleQueue(f"srcnet-idle-{os.getpid()}-{time.monotonic_ns()}")
    before = app.conf.task_default_queue
    app.conf.task_default_queue = queue.name
    try:
        yield queue
    finally:
        app.conf.task_default_queue = before
        with app.connection_for_write() as connection:
            connection.default_channel.client.delete(queue.name)


@pytest.fixture(autouse=True)
def _let_the_worker_finish(request):  # type: ignore[no-untyped-def]
    """After a test that used the worker, wait until it is idle: flushing the tables while a task still
    holds row locks deadlocks the test's teardown."""
    yield
    if "celery_worker" not in request.fixturenames:
        return
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and _worker_busy():
        time.sleep(0.2)


def register_storage(*elements: str, prefix: str = "/") -> list:  # type: ignore[type-arg]
    """Register a storage endpoint (at a regional centre of its own) for each ``scheme://host:port`` that a
    test's URLs use: the transfer service refuses URLs on storage the platform does not know."""
    from urllib.parse import urlsplit

    from topology.models import RegionalCentre, StorageEndpoint

    endpoints = []
    for number, element in enumerate(elements):
        parts = urlsplit(element)
        root = parts.scheme in ("root", "xroot")
        port = parts.port or (1094 if root else 443)
        other = port + 1 if port < 65535 else port - 1
        tag = f"{parts.hostname}-{parts.scheme}-{port}".upper().replace(".", "-")
        centre, _ = RegionalCentre.objects.get_or_create(
            name=f"T{tag}", defaults={"region": "europe", "country": "GB", "latitude": 0, "longitude": 0}
        )
        endpoint = StorageEndpoint(
            name=f"T{number}-{tag}"[:64],
            site=centre,
            hostname=parts.hostname or "",
            root_port=port if root else other,
            http_port=other if root else port,
            prefix=prefix,
        )
        endpoint.full_clean()
        endpoint.save()
        endpoints.append(endpoint)
    return endpoints
