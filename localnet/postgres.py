"""A private PostgreSQL cluster on a loopback port, owned by the ``postgres`` account.

No role is trusted: the ``postgres`` account administers it over its Unix socket (peer authentication:
the operating system's account is the role), and every other client logs in over TCP with its password
(SCRAM), which the state keeps among its secrets (``<state>/secrets``, readable by its owner only; the
platform's processes get theirs in their environment, localnet/stack.py). Another account on the machine
reaches neither the platform's database nor Rucio's."""

from __future__ import annotations

import glob
import shutil
import subprocess
from pathlib import Path

from .processes import ServiceError, port_open, run, wait_for_port
from .state import POSTGRES_PASSWORD, RUCIO_DB_PASSWORD, StateDir, short_run_dir
from .users import as_user, chown_tree

DB_NAME = "srcnet"
DB_USER = "srcnet"
RUCIO_DB_ROLE = "rucio"

# Written at every start, and the server reloaded when it changed (a cluster made before had `trust`).
HBA = """\
# Written by localnet/postgres.py: nothing is trusted. The postgres account administers over the Unix
# socket (peer); every other client logs in over TCP on loopback with its password.
local all postgres peer
host all all 127.0.0.1/32 scram-sha-256
"""


def _bin(name: str) -> str:
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if not candidates:
        raise ServiceError("PostgreSQL is not installed: run scripts/bootstrap.sh")
    return candidates[-1]


def socket_dir(state: StateDir) -> Path:
    # A short folder: the socket's path must stay within the Unix-socket limit however deep the checkout lies.
    return short_run_dir(state.path / "pg", "postgres")


def admin_sql(state: StateDir, database: str, *sql: str) -> str:
    """Run ``sql`` in ``database`` as the cluster's superuser (the postgres account, over the socket);
    the rows, tab-separated."""
    argv = ["psql", "-tA", "-q", "-v", "ON_ERROR_STOP=1", "-h", str(socket_dir(state))]
    argv += ["-p", str(state.port("postgres")), "-U", "postgres", "-d", database]
    for statement in sql:
        argv += ["-c", statement]
    return run(as_user("postgres", argv)).stdout.strip()


def ensure_role(state: StateDir, role: str, password_secret: str, *options: str) -> None:
    """The login role ``role`` with the state's secret ``password_secret`` as its password (set again at
    every start: a cluster made before passwords may have another)."""
    password = state.secret(password_secret)  # URL-safe characters: nothing to escape
    exists = admin_sql(state, "postgres", f"SELECT 1 FROM pg_roles WHERE rolname = '{role}'")
    verb = "ALTER" if exists else "CREATE"
    admin_sql(state, "postgres", f"{verb} ROLE {role} LOGIN PASSWORD '{password}' {' '.join(options)}")


def ensure_postgres(state: StateDir) -> int:
    """Initialise (first time), start (if stopped) and provision the cluster; return its port."""
    port = state.port("postgres")
    folder = state.sub("pg")
    data = folder / "data"
    if not (data / "PG_VERSION").exists():
        chown_tree(folder, "postgres")
        initdb = [_bin("initdb"), "-D", str(data), "-U", "postgres", "--auth-local=peer"]
        initdb += ["--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C.UTF-8"]
        run(as_user("postgres", initdb))
    hba_changed = _write_hba(data)
    sockets = socket_dir(state)
    if not port_open(port):
        # fsync off: a throw-away local cluster; a clean stop (pg_ctl -m fast) still loses nothing.
        options = (
            f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200 "
            "-c password_encryption=scram-sha-256"
        )
        pg_ctl = [_bin("pg_ctl"), "-D", str(data), "-l", str(folder / "postgres.log"), "-w", "-t", "60"]
        run(as_user("postgres", [*pg_ctl, "start", "-o", options]))
        wait_for_port(port, what="postgres")
    elif hba_changed:
        run(as_user("postgres", [_bin("pg_ctl"), "-D", str(data), "reload"]))
    _provision(state)
    return port


def _write_hba(data: Path) -> bool:
    """Write ``HBA`` as the cluster's pg_hba.conf; whether it changed."""
    path = data / "pg_hba.conf"
    if path.exists() and path.read_text() == HBA:
        return False
    path.write_text(HBA)
    path.chmod(0o600)
    chown_tree(path, "postgres")
    return True


def _provision(state: StateDir) -> None:
    ensure_role(state, DB_USER, POSTGRES_PASSWORD, "CREATEDB")
    # Rucio's role too, though Rucio may never start here: a role of a cluster made before passwords keeps its
    # old one until someone sets it.
    ensure_role(state, RUCIO_DB_ROLE, RUCIO_DB_PASSWORD)
    if not admin_sql(state, "postgres", f"SELECT 1 FROM pg_database WHERE datname = '{DB_NAME}'"):
        admin_sql(state, "postgres", f"CREATE DATABASE {DB_NAME} OWNER {DB_USER}")


def stop_postgres(state: StateDir) -> bool:
    data = state.path / "pg" / "data"
    if not (data / "postmaster.pid").exists():
        return False
    proc = subprocess.run(
        as_user("postgres", [_bin("pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]),
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode == 0:
        shutil.rmtree(short_run_dir(state.path / "pg"), ignore_errors=True)
    return proc.returncode == 0


def data_dir(state: StateDir) -> Path:
    return state.path / "pg" / "data"
