"""A private PostgreSQL cluster on a loopback port, owned by the ``postgres`` account."""

from __future__ import annotations

import glob
import shutil
import subprocess
from pathlib import Path

from .processes import ServiceError, port_open, run, wait_for_port
from .state import StateDir, short_run_dir
from .users import as_user, chown_tree

DB_NAME = "srcnet"
DB_USER = "srcnet"
DB_PASSWORD = "srcnet"


def _bin(name: str) -> str:
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if not candidates:
        raise ServiceError("PostgreSQL is not installed: run scripts/bootstrap.sh")
    return candidates[-1]


def _psql(port: int, *sql: str) -> subprocess.CompletedProcess[str]:
    argv = [
        "psql",
        "-q",
        "-v",
        "ON_ERROR_STOP=1",
        "-h",
        "127.0.0.1",
        "-p",
        str(port),
        "-U",
        "postgres",
        "-d",
        "postgres",
    ]
    for statement in sql:
        argv += ["-c", statement]
    return run(argv)


def ensure_postgres(state: StateDir) -> int:
    """Initialise (first time), start (if stopped) and provision the cluster; return its port."""
    port = state.port("postgres")
    folder = state.sub("pg")
    data = folder / "data"
    if not (data / "PG_VERSION").exists():
        chown_tree(folder, "postgres")
        run(
            as_user(
                "postgres",
                [
                    _bin("initdb"),
                    "-D",
                    str(data),
                    "-U",
                    "postgres",
                    "--auth=trust",
                    "-E",
                    "UTF8",
                    "--locale=C.UTF-8",
                ],
            )
        )
    if not port_open(port):
        # fsync off: a throw-away local cluster; a clean stop (pg_ctl -m fast) still loses nothing.
        # The Unix socket goes to a short folder: its path must stay within the socket limit however deep
        # the checkout lies (clients use TCP on loopback).
        sockets = short_run_dir(folder, "postgres")
        options = (
            f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        run(
            as_user(
                "postgres",
                [
                    _bin("pg_ctl"),
                    "-D",
                    str(data),
                    "-l",
                    str(folder / "postgres.log"),
                    "-w",
                    "-t",
                    "60",
                    "start",
                    "-o",
                    options,
                ],
            )
        )
        wait_for_port(port, what="postgres")
    _provision(port)
    return port


def _exists(port: int, query: str) -> bool:
    argv = [
        "psql",
        "-tA",
        "-h",
        "127.0.0.1",
        "-p",
        str(port),
        "-U",
        "postgres",
        "-d",
        "postgres",
        "-c",
        query,
    ]
    return bool(run(argv).stdout.strip())


def _provision(port: int) -> None:
    if not _exists(port, f"SELECT 1 FROM pg_roles WHERE rolname = '{DB_USER}'"):
        _psql(port, f"CREATE ROLE {DB_USER} LOGIN PASSWORD '{DB_PASSWORD}' CREATEDB")
    if not _exists(port, f"SELECT 1 FROM pg_database WHERE datname = '{DB_NAME}'"):
        _psql(port, f"CREATE DATABASE {DB_NAME} OWNER {DB_USER}")


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
