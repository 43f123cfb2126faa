"""A real Rucio 41.5.1 server on loopback and its daemons, run from their own virtual environment
(``.venv-rucio``).

The server keeps its catalogue in a database of the state's private PostgreSQL (psycopg 3,
``postgresql+psycopg://``), is served by gunicorn on ``state.port(<key>)`` and is stopped by PID like every
other local daemon. Its daemons (the conveyor's submitter, poller and finisher, the judge's evaluator and
repairer) run beside it as long-running processes with the same configuration, started and stopped with it
(``localnet.rucio_daemons``): a rule made with the ordinary ``rucio`` client is carried out with no further
step. Server and daemons run as the unprivileged ``rucio`` account when we are root.

One state can hold several Rucio instances (the test state is shared by several pytest runs at once):
``instance`` names the database (``rucio_<state>[_<instance>]``), the port key, the folder and the PID files.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import string
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from .issuer_rucio import RucioClient, rucio_oidc_files
from .postgres import RUCIO_DB_ROLE, admin_sql, ensure_postgres
from .processes import ServiceError, port_open, run, running, start_daemon, stop_daemon
from .rucio_daemons import start_daemons, stop_daemons
from .state import PROJECT_ROOT, RUCIO_DB_PASSWORD, StateDir
from .users import RUCIO_ACCOUNT, chown_tree, grant_traversal, service_account

RUCIO_VENV = Path(os.environ.get("SRCNET_RUCIO_VENV", str(PROJECT_ROOT / ".venv-rucio")))
RUCIO_TREE = PROJECT_ROOT / "rucio"
POLICY_PATH = RUCIO_TREE / "policy"
ROOT_ACCOUNT = "root"
# The schemes of the copies the conveyor submits (``[conveyor] scheme``): the platform's storage serves these.
CONVEYOR_SCHEMES = ("root", "davs", "https", "http")


@dataclass(frozen=True)
class RucioServer:
    """How to reach one running local Rucio server.

    The app side passes ``url``/``account``/``username``/``password`` explicitly to the Rucio client
    (``replicas.rucio.RucioAdapter``); ``client_config`` is the same as a file for the ``rucio`` CLI
    (``RUCIO_CONFIG=<client_config>``); ``config`` is the server's and daemons' file."""

    url: str
    account: str
    username: str
    password: str
    config: Path
    client_config: Path
    database: str
    # The CA that verifies the token issuer Rucio asks for tokens ([oidc]); blank: none configured.
    issuer_ca: str = ""
    # The CA that verifies the source of the SciTags marks ([packet-marking] fetch_url); blank: none.
    marking_ca: str = ""

    def client_kwargs(self) -> dict[str, str]:
        return {
            "url": self.url,
            "account": self.account,
            "username": self.username,
            "password": self.password,
        }

    def platform_env(self) -> dict[str, str]:
        """The platform's settings that point it at this server (``RucioAdapter.from_env``): with them, the
        Celery beat's ``replicas.follow_rucio_rules`` follows its rules into replicas."""
        return {
            "SRCNET_RUCIO_URL": self.url,
            "SRCNET_RUCIO_ACCOUNT": self.account,
            "SRCNET_RUCIO_USERNAME": self.username,
            "SRCNET_RUCIO_PASSWORD": self.password,
        }


def _slug(text: str) -> str:
    keep = string.ascii_lowercase + string.digits + "_"
    return "".join(ch if ch in keep else "_" for ch in text.lower())


def _names(state: StateDir, instance: str | None) -> tuple[str, str, str]:
    """(database, port key, daemon/folder name) of one instance."""
    suffix = f"_{_slug(instance)}" if instance else ""
    database = f"rucio_{_slug(state.path.name)}{suffix}"[:63]
    key = f"rucio:{instance}" if instance else "rucio"
    daemon = f"rucio-{_slug(instance)}" if instance else "rucio"
    return database, key, daemon


def rucio_python() -> Path:
    python = RUCIO_VENV / "bin" / "python"
    if not python.exists():
        raise ServiceError(f"{python} is missing: run scripts/bootstrap.sh (it creates .venv-rucio)")
    return python


def _site_packages() -> Path:
    out = run([str(rucio_python()), "-c", "import os, rucio; print(os.path.dirname(rucio.__file__))"])
    return Path(out.stdout.strip())


def _ensure_database(state: StateDir, database: str) -> None:
    """Rucio's database in the state's cluster, owned by Rucio's role (which ensure_postgres keeps)."""
    if not admin_sql(state, "postgres", f"SELECT 1 FROM pg_database WHERE datname = '{database}'"):
        admin_sql(state, "postgres", f"CREATE DATABASE {database} OWNER {RUCIO_DB_ROLE}")


def _bootstrapped(state: StateDir, database: str) -> bool:
    query = (
        "SELECT 1 FROM information_schema.tables"
        " WHERE table_schema = 'rucio' AND table_name = 'alembic_version'"
    )
    if not admin_sql(state, database, query):
        return False
    return bool(admin_sql(state, database, "SELECT 1 FROM rucio.accounts WHERE account = 'root'"))


def _credentials(folder: Path) -> dict[str, str]:
    path = folder / "credentials.json"
    if path.exists():
        return dict(json.loads(path.read_text()))
    creds = {"username": "srcnet-root", "password": secrets.token_urlsafe(18)}
    path.write_text(json.dumps(creds))
    path.chmod(0o600)
    return creds


def _render(template: str, target: Path, values: Mapping[str, str]) -> bool:
    """Write ``target`` from the template; True if its text changed."""
    text = string.Template((RUCIO_TREE / "etc" / template).read_text()).substitute(values)
    changed = not target.exists() or target.read_text() != text
    target.write_text(text)
    target.chmod(0o600)
    return changed


def _oidc_section(folder: Path, client: RucioClient | None, *, fresh: bool) -> tuple[str, str]:
    """The ``[oidc]`` section that points Rucio at its token issuer, and the issuer's CA file: from
    ``client`` when given, else the one an earlier call wrote (a fresh instance drops it); blank without."""
    kept = folder / "oidc.json"
    if client is not None:
        options = rucio_oidc_files(client, folder)
        kept.write_text(json.dumps({"options": options, "ca": client.ca_file}))
        kept.chmod(0o600)
    elif fresh:
        kept.unlink(missing_ok=True)
        (folder / "idpsecrets.json").unlink(missing_ok=True)
    if not kept.exists():
        return "", ""
    recorded = json.loads(kept.read_text())
    lines = ["[oidc]", *(f"{key} = {value}" for key, value in recorded["options"].items())]
    return "\n".join(lines) + "\n", str(recorded["ca"])


@dataclass(frozen=True)
class PacketMarking:
    """Rucio's ``[packet-marking]`` (Rucio 41's FTS3 transfertool): with it, the conveyor gives each file it
    submits the ``scitag`` ``expId << 6 | activityId`` of the rule's activity, from the registry JSON at
    ``fetch_url`` (the platform's ``/api/scitags/``: the same marks as the platform's own copies), read
    again every ``fetch_interval`` seconds (five minutes after a failed read). ``ca_file``: the CA that
    verifies an ``https://`` ``fetch_url`` (Rucio reads it with requests' defaults)."""

    fetch_url: str
    exp_name: str
    fetch_interval: int = 3600
    fetch_timeout: int = 5
    ca_file: str = ""

    def section(self) -> str:
        lines = [
            "[packet-marking]",
            "enabled = True",
            f"fetch_url = {self.fetch_url}",
            f"exp_name = {self.exp_name}",
            f"fetch_interval = {int(self.fetch_interval)}",
            f"fetch_timeout = {int(self.fetch_timeout)}",
        ]
        return "\n".join(lines) + "\n"


def _marking_section(folder: Path, marking: PacketMarking | None, *, fresh: bool) -> tuple[str, str]:
    """The ``[packet-marking]`` section and the CA of its ``fetch_url``: from ``marking`` when given, else
    the one an earlier call wrote (a fresh instance drops it); blank without."""
    kept = folder / "packet-marking.json"
    if marking is not None:
        for name, value in (("fetch_url", marking.fetch_url), ("exp_name", marking.exp_name)):
            if not value or any(ch in value for ch in "\r\n"):
                raise ServiceError(f"packet marking: {name} {value!r} must be one non-empty line")
        if not marking.fetch_url.startswith(("https://", "http://")):
            # Rucio reads it with requests.get: a file path would fail at every submission, marking nothing.
            raise ServiceError(f"packet marking: fetch_url {marking.fetch_url!r} is not an http(s) URL")
        if marking.fetch_interval < 1 or marking.fetch_timeout < 1:
            raise ServiceError("packet marking: fetch_interval and fetch_timeout must be at least 1 s")
        kept.write_text(json.dumps(asdict(marking)))
        kept.chmod(0o600)
    elif fresh:
        kept.unlink(missing_ok=True)
    if not kept.exists():
        return "", ""
    recorded = PacketMarking(**json.loads(kept.read_text()))
    return recorded.section(), recorded.ca_file


def _usercert_copy(folder: Path, usercert: Path | None) -> Path | None:
    """The conveyor's certificate as the daemons' account may read it: a copy of its own (0600). Without
    ``usercert``, the copy an earlier call made (if any) stays in use."""
    copy = folder / "usercert.pem"
    if usercert is None:
        return copy if copy.exists() else None
    shutil.copyfile(usercert, copy)
    copy.chmod(0o600)
    return copy


def rucio_env(server: RucioServer) -> dict[str, str]:
    """The environment of a server-side Rucio process (server, daemons): its config and the SKA policy."""
    env = dict(os.environ)
    for key in ("RUCIO_HOME", "RUCIO_CLIENT_MODE", "VIRTUAL_ENV", "DJANGO_SETTINGS_MODULE"):
        env.pop(key, None)
    env["RUCIO_CONFIG"] = str(server.config)
    env["PYTHONPATH"] = str(POLICY_PATH)
    env["PYTHONUNBUFFERED"] = "1"
    env["HOME"] = str(Path(server.config).parent)
    cas = list(dict.fromkeys(ca for ca in (server.issuer_ca, server.marking_ca) if ca))
    if len(cas) == 1:
        # Rucio asks its issuer, and reads its SciTags marks, with requests' defaults: the local CA is how
        # it trusts the local issuer and the platform's endpoint.
        env["REQUESTS_CA_BUNDLE"] = cas[0]
    elif cas:
        bundle = Path(server.config).parent / "ca-bundle.pem"
        env["REQUESTS_CA_BUNDLE"] = str(bundle)
    return env


def _write_bundle(folder: Path, cas: list[str]) -> None:
    """The CAs Rucio trusts, in one file, when the issuer's and the marks' source's differ."""
    if len(set(cas)) > 1:
        bundle = folder / "ca-bundle.pem"
        bundle.write_text("".join(Path(ca).read_text() for ca in dict.fromkeys(cas)))
        bundle.chmod(0o600)


def ping(url: str, timeout: float = 2.0) -> str | None:
    """The server's version from ``/ping``, or None when it does not answer."""
    try:
        with urllib.request.urlopen(f"{url}/ping", timeout=timeout) as resp:
            return str(json.loads(resp.read())["version"])
    except (OSError, ValueError, KeyError, urllib.error.URLError):
        return None


def ensure_rucio(
    state: StateDir,
    *,
    instance: str | None = None,
    usercert: Path | None = None,
    workers: int = 2,
    fresh: bool = False,
    daemons: bool = True,
    token_client: RucioClient | None = None,
    packet_marking: PacketMarking | None = None,
    mock_storage: bool = False,
    pooled: bool = False,
) -> RucioServer:
    """Create (once), configure and start the local Rucio server and its daemons unless they run; return
    how to reach the server.

    ``fresh`` stops the instance and drops its database first (an empty catalogue, for a test session).
    ``usercert`` (a PEM with certificate and key) becomes ``[conveyor] usercert``: the client certificate
    the conveyor presents to an ``https://`` FTS3 endpoint; a later call without it keeps it (a fresh one
    drops it). ``token_client`` (Rucio's client at the token issuer, localnet/issuer_rucio.py) becomes
    ``[oidc]``: the conveyor then asks it for tokens for RSEs with ``oidc_support`` and presents one to the
    FTS3 endpoint; a later call without it keeps it (a fresh one drops it). ``packet_marking`` becomes
    ``[packet-marking]``: the conveyor then gives each file it submits the SciTags mark of its rule's
    activity; kept and dropped the same way. Daemons that run with another
    configuration start again. ``daemons=False`` starts the server alone. ``mock_storage`` lets the
    conveyor submit ``mock://`` copies too (the RSEs of the control plane's load benchmark, whose FTS3
    endpoint alone takes them). ``pooled`` keeps the server's and daemons' database connections in a pool
    (Rucio's queuepool) instead of one per session: for a load benchmark, where nothing restarts PostgreSQL
    (a pooled connection fails once after a restart; rucio/etc/rucio.cfg.in).
    Whatever this call started is stopped again if the instance does not come up."""
    database, port_key, daemon = _names(state, instance)
    account = service_account(RUCIO_ACCOUNT)
    folder = state.sub("rucio", daemon)
    logdir = state.sub("rucio", daemon, "log")
    port = state.port(port_key)
    url = f"http://127.0.0.1:{port}"
    creds = _credentials(folder)
    pg_port = ensure_postgres(state)
    password = state.secret(RUCIO_DB_PASSWORD)
    db_url = f"postgresql+psycopg://{RUCIO_DB_ROLE}:{password}@127.0.0.1:{pg_port}/{database}"
    site_packages = _site_packages()
    config, alembic_ini, client_config = (
        folder / "rucio.cfg",
        folder / "alembic.ini",
        folder / "rucio-client.cfg",
    )
    if fresh and usercert is None:
        (folder / "usercert.pem").unlink(missing_ok=True)
    cert_copy = _usercert_copy(folder, usercert)
    conveyor_extra = f"usercert = {cert_copy}\n" if cert_copy else ""
    oidc_section, issuer_ca = _oidc_section(folder, token_client, fresh=fresh)
    marking_section, marking_ca = _marking_section(folder, packet_marking, fresh=fresh)
    _write_bundle(folder, [ca for ca in (issuer_ca, marking_ca) if ca])
    config_changed = _render(
        "rucio.cfg.in",
        config,
        {
            "logdir": str(logdir),
            "mailtemplatedir": str(RUCIO_VENV / "rucio" / "etc" / "mail_templates"),
            "database_url": db_url,
            "username": creds["username"],
            "password": creds["password"],
            "alembic_ini": str(alembic_ini),
            "conveyor_extra": conveyor_extra,
            "poolclass": "queuepool" if pooled else "nullpool",
            "conveyor_schemes": ",".join(CONVEYOR_SCHEMES + (("mock",) if mock_storage else ())),
            "oidc_section": oidc_section,
            "packet_marking_section": marking_section,
        },
    )
    _render(
        "alembic.ini.in",
        alembic_ini,
        {"script_location": str(site_packages / "db" / "sqla" / "migrate_repo"), "database_url": db_url},
    )
    _render("rucio-client.cfg.in", client_config, {"url": url, **creds})
    if account is not None:
        # The server and the daemons read their configuration (and the conveyor's certificate) as rucio.
        chown_tree(folder, account)
        grant_traversal(account, rucio_python())
        grant_traversal(account, RUCIO_TREE / "conveyor.py")
    server = RucioServer(
        url=url,
        account=ROOT_ACCOUNT,
        username=creds["username"],
        password=creds["password"],
        config=config,
        client_config=client_config,
        database=database,
        issuer_ca=issuer_ca,
        marking_ca=marking_ca,
    )

    def heartbeats() -> set[int]:
        rows = admin_sql(state, database, "SELECT DISTINCT pid FROM rucio.heartbeats")
        return {int(pid) for pid in rows.split()}

    def forget_heartbeats(pid: int) -> None:
        admin_sql(state, database, f"DELETE FROM rucio.heartbeats WHERE pid = {int(pid)}")

    def start_the_daemons() -> None:
        if daemons:
            start_daemons(
                state,
                daemon,
                venv=RUCIO_VENV,
                env=rucio_env(server),
                cwd=folder,
                account=account,
                heartbeats=heartbeats,
                forget_heartbeats=forget_heartbeats,
            )

    if fresh:
        stop_daemons(state, daemon)
        stop_daemon(state, daemon, timeout=20)
        admin_sql(state, "postgres", f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
    elif running(state, daemon) and port_open(port) and ping(url):
        if config_changed:
            # Daemons read their configuration once: those of an older one (another usercert) start again.
            stop_daemons(state, daemon)
        start_the_daemons()
        return server
    stop_daemons(state, daemon)
    stop_daemon(state, daemon, timeout=20)
    _ensure_database(state, database)
    if not _bootstrapped(state, database):
        # build_database() + create_base_vo() + create_root_account() (identity from [bootstrap]).
        proc = subprocess.run(
            [str(rucio_python()), str(RUCIO_VENV / "rucio" / "tools" / "bootstrap.py")],
            env=rucio_env(server),
            cwd=folder,
            capture_output=True,
            text=True,
            check=False,
        )
        (logdir / "bootstrap.log").write_text(proc.stdout + proc.stderr)
        if proc.returncode != 0 or not _bootstrapped(state, database):
            raise ServiceError(f"Rucio schema bootstrap failed: {proc.stderr.strip()[-2000:]}")
    argv = [
        str(RUCIO_VENV / "bin" / "gunicorn"),
        # Stopped by PID: no control socket (its default path is under $HOME, shared by every instance).
        "--no-control-socket",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
        "--timeout",
        "120",
        "--error-logfile",
        "-",
        "rucio.web.rest.flaskapi.v1.main:application",
    ]
    pid = start_daemon(
        state, daemon, argv, env=rucio_env(server), cwd=folder, log_name=f"{daemon}.log", user=account
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if ping(url):
            try:
                start_the_daemons()
            except BaseException:
                stop_daemon(state, daemon, timeout=20)
                raise
            return server
        if not running(state, daemon):
            break
        time.sleep(0.2)
    log = state.path / "log" / f"{daemon}.log"
    stop_daemon(state, daemon)
    raise ServiceError(f"Rucio server (pid {pid}) did not answer {url}/ping; see {log}")


def stop_rucio(state: StateDir, *, instance: str | None = None) -> bool:
    """Stop the instance's daemons, then its gunicorn (master PID; it stops its workers), each by its PID
    file. True if the server was running."""
    name = _names(state, instance)[2]
    stop_daemons(state, name)
    return stop_daemon(state, name, timeout=20)


def _recorded(state: StateDir) -> list[str]:
    folder = state.path / "pids"
    if not folder.exists():
        return []
    stems = (p.stem for p in folder.glob("rucio*.pid"))
    return sorted(stem for stem in stems if stem.split(".")[0] == "rucio" or stem.startswith("rucio-"))


def rucio_daemons(state: StateDir) -> list[str]:
    """PID-file names of the Rucio servers this state started (``rucio``, ``rucio-<instance>``)."""
    return [name for name in _recorded(state) if "." not in name]


def rucio_processes(state: StateDir) -> list[str]:
    """PID-file names of every Rucio process this state started: servers and their daemons
    (``rucio.conveyor-submitter``, ``rucio-<instance>.judge-evaluator``, ...)."""
    return _recorded(state)


def stop_all_rucio(state: StateDir) -> list[str]:
    """Stop every Rucio process of this state, each by its own PID file, the daemons before the servers;
    the names of those that ran."""
    names = sorted(_recorded(state), key=lambda name: "." not in name)
    return [name for name in names if stop_daemon(state, name, timeout=20)]
