"""The local network's PostgreSQL trusts nobody: every client logs in over TCP with its role's password
(the state's secret), the postgres account alone administers, over its socket; an account of the machine
without the password reaches neither the platform's database nor Rucio's. The platform's processes have it."""

from __future__ import annotations

import stat
import subprocess

import psycopg
import pytest
from django.conf import settings
from django.db import connection

from localnet.postgres import (
    DB_NAME,
    DB_USER,
    HBA,
    RUCIO_DB_ROLE,
    admin_sql,
    data_dir,
    ensure_postgres,
    socket_dir,
)
from localnet.state import POSTGRES_PASSWORD, RUCIO_DB_PASSWORD, StateDir


def _login(port: int, user: str, password: str | None, database: str = "postgres") -> None:
    # No password at all: libpq sends none (PGPASSWORD and ~/.pgpass are not this test's).
    conninfo = f"host=127.0.0.1 port={port} user={user} dbname={database} connect_timeout=5"
    if password is not None:
        conninfo += f" password={password}"
    psycopg.connect(conninfo, passfile="/dev/null").close()


@pytest.mark.parametrize("user", [DB_USER, RUCIO_DB_ROLE, "postgres"])
def test_no_role_logs_in_without_its_password(test_state: StateDir, user: str) -> None:
    port = ensure_postgres(test_state)
    with pytest.raises(psycopg.OperationalError, match="password"):
        _login(port, user, None)
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        _login(port, user, "srcnet")  # the built-in password of before, a guess
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        _login(port, user, user)


def test_the_platform_logs_in_with_the_states_password(test_state: StateDir, db) -> None:  # type: ignore[no-untyped-def]
    port = ensure_postgres(test_state)
    assert settings.DATABASES["default"]["PASSWORD"] == test_state.secret(POSTGRES_PASSWORD)
    _login(port, DB_USER, test_state.secret(POSTGRES_PASSWORD), DB_NAME)
    with connection.cursor() as cursor:  # this process's own connection, as every worker's
        cursor.execute("SELECT current_user")
        assert cursor.fetchone() == (DB_USER,)


def test_the_cluster_trusts_nobody_and_keeps_its_passwords_private(test_state: StateDir) -> None:
    ensure_postgres(test_state)
    hba = data_dir(test_state) / "pg_hba.conf"
    assert hba.read_text() == HBA
    rules = [line.split() for line in HBA.splitlines() if line and not line.startswith("#")]
    assert all(rule[-1] in ("peer", "scram-sha-256") for rule in rules)
    # What the server itself applies (not only the file): no trust line loaded.
    loaded = admin_sql(test_state, "postgres", "SELECT DISTINCT auth_method FROM pg_hba_file_rules")
    assert set(loaded.split()) == {"peer", "scram-sha-256"}
    for secret in (POSTGRES_PASSWORD, RUCIO_DB_PASSWORD):
        path = test_state.path / "secrets" / secret
        if path.exists():
            assert stat.S_IMODE(path.stat().st_mode) == 0o600
    # The passwords are stored as SCRAM verifiers, never in clear.
    stored = admin_sql(
        test_state, "postgres", f"SELECT rolpassword FROM pg_authid WHERE rolname = '{DB_USER}'"
    )
    assert stored.startswith("SCRAM-SHA-256$") and test_state.secret(POSTGRES_PASSWORD) not in stored


def test_a_cluster_made_with_trust_is_closed_at_its_next_start(test_state: StateDir) -> None:
    """A state made before (its pg_hba.conf trusted every local client): the next ensure_postgres rewrites
    it and reloads the running server, and the trust is gone at once."""
    port = ensure_postgres(test_state)
    hba = data_dir(test_state) / "pg_hba.conf"
    try:
        hba.write_text("host all all 127.0.0.1/32 trust\nlocal all postgres peer\n")
        subprocess.run(
            ["runuser", "-u", "postgres", "--", "psql", "-h", str(socket_dir(test_state)), "-p", str(port),
             "-U", "postgres", "-c", "SELECT pg_reload_conf()"],
            check=True, capture_output=True,
        )  # fmt: skip
        _login(port, DB_USER, None)  # trusted, as before
        ensure_postgres(test_state)
        with pytest.raises(psycopg.OperationalError, match="password"):
            _login(port, DB_USER, None)
    finally:
        ensure_postgres(test_state)  # the file as it must be, whatever happened
    assert hba.read_text() == HBA
