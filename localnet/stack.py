"""Bring a whole local network up or down: databases, sites, workers, web server."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from srcnet.workers import worker_concurrency

from .pki import ca_certificate, ensure_pki, host_credentials, service_key
from .postgres import ensure_postgres, stop_postgres
from .processes import (
    ServiceError,
    is_alive,
    port_open,
    read_pid,
    running,
    start_daemon,
    stop_daemon,
    wait_for_port,
)
from .redis import ensure_redis, redis_url, stop_redis
from .scitags import scitags_env
from .state import DJANGO_SECRET_KEY, FIREFLIES_TOKEN, POSTGRES_PASSWORD, PROJECT_ROOT, StateDir
from .users import chown_tree, drop_to, grant_traversal, service_account
from .xrootd import known_sites, stop_site

VENV_BIN = Path(sys.executable).parent
# Celery beat's schedule lives in the database (django-celery-beat): the static entries of
# CELERY_BEAT_SCHEDULE are copied there at start, and recurring campaigns add their own.
BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"


def service_env(state: StateDir, name: str) -> dict[str, str]:
    """The environment every process of the local network runs with."""
    env = dict(os.environ)
    env.update(
        {
            "SRCNET_STATE": name,
            "DJANGO_SETTINGS_MODULE": "srcnet.settings",
            "X509_CERT_DIR": str(state.path / "pki" / "certs"),
            "GFAL_PYTHONBIN": "/usr/bin/python3",
            "XRD_CONNECTIONRETRY": "1",
            "XRD_CONNECTIONWINDOW": "5",
            "PYTHONUNBUFFERED": "1",
            # Campaign and simulation reports: written by the workers, in the state folder they own.
            "SRCNET_REPORTS_DIR": str(state.path / "reports"),
            # The local network's storage sites listen on loopback (a deployment refuses such endpoints).
            "SRCNET_ALLOW_LOCAL_STORAGE": "1",
        }
    )
    # The local network's signing key: its processes run as the service account, which cannot read the
    # state's secrets; one deployed reads its own from the environment file the Ansible role writes.
    env.setdefault("SRCNET_SECRET_KEY", state.secret(DJANGO_SECRET_KEY))
    # This state's broker, with its password (which the service account cannot read from the state): set,
    # not defaulted, as SRCNET_STATE is, so a process started for another state never reaches this one's.
    env["SRCNET_REDIS_URL"] = redis_url(state)
    env["SRCNET_DB_PASSWORD"] = state.secret(POSTGRES_PASSWORD)  # its database's, as the broker's
    env.update(token_env(state))
    for key, value in scitags_env().items():  # the local network marks its copies (a caller's setting wins)
        env.setdefault(key, value)
    # Its collector's journal, read by the beat's network accounting (set: another state's never applies).
    env["SRCNET_FIREFLIES_URL"] = f"http://127.0.0.1:{state.port('fireflies:metrics')}"
    env["SRCNET_FIREFLIES_TOKEN"] = state.secret(FIREFLIES_TOKEN)
    return env


def token_env(state: StateDir) -> dict[str, str]:
    """The settings that point the platform's processes at the state's token issuer (docs/tokens.md), once
    it has one (localnet/issuer.py); nothing before."""
    from .issuer import issuer_settings
    from .issuer_sso import sign_on_env

    issuer = issuer_settings(state)
    if issuer is None:
        return {}
    # srcnet/settings.py reads SRCNET_TOKEN_<KEY> into SRCNET_TOKENS[<KEY>]; single sign-on through the same
    # issuer where the state offers it (the demo's: localnet/issuer_sso.py offer_sign_on).
    return {
        **{f"SRCNET_TOKEN_{key}": value for key, value in issuer.as_setting().items()},
        **sign_on_env(state),
    }


def platform_process(state: StateDir, name: str) -> tuple[dict[str, str], str | None]:
    """The environment and the account of a platform process (Celery worker, web server, FTS3 service):
    the unprivileged ``srcnet`` account when we are root, with a home and a reports folder of its own in
    the state folder, and the checkout made reachable to it."""
    env = service_env(state, name)
    account = service_account()
    env["HOME"] = str(state.sub("home"))
    if account is not None:
        grant_traversal(account, PROJECT_ROOT / "manage.py")
        for folder in ("home", "reports"):
            chown_tree(state.sub(folder), account)
    return env, account


def metrics_multiproc_dir(state: StateDir, server: str, account: str | None) -> Path:
    """An empty folder where the worker processes of one web server (``web``, ``fts3``) keep their
    Prometheus counters, summed by its ``/metrics`` (``PROMETHEUS_MULTIPROC_DIR``; monitoring/views.py).
    Emptied at each start: counters start from zero with a new server, as Prometheus expects."""
    folder = state.sub("monitoring") / f"multiproc-{server}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    if account is not None:
        chown_tree(folder, account)
    return folder


def spawn_platform_process(
    argv: list[str], env: dict[str, str], account: str | None, log: Path, *, mode: str = "wb"
) -> subprocess.Popen[bytes]:
    """Start a platform process the caller watches itself (the tests' workers and services): in its own
    session, as ``account``, from the checkout, its output to ``log``."""
    with open(log, mode) as out:
        return subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=PROJECT_ROOT,
            start_new_session=True,
            **drop_to(account),
        )


def ensure_core(state: StateDir) -> dict[str, int]:
    """PostgreSQL, Redis and the CA: what everything else needs."""
    ensure_pki(state)
    state.secret(DJANGO_SECRET_KEY)
    return {"postgres": ensure_postgres(state), "redis": ensure_redis(state)}


def worker_argv(hostname: str, *, concurrency: int | None = None, beat: bool = False) -> list[str]:
    """The Celery worker command line of the local network (also used by the test fixtures); with
    ``beat``, the worker also runs Celery beat on the database schedule. Its processes: the copies the
    dispatcher admits at once and the control tasks' (srcnet/workers.py), unless ``concurrency`` says."""
    argv = [
        str(VENV_BIN / "celery"),
        "-A",
        "srcnet",
        "worker",
        "--loglevel",
        "INFO",
        "--pool",
        "prefork",
        "--concurrency",
        str(worker_concurrency() if concurrency is None else concurrency),
        "--hostname",
        hostname,
        "--without-gossip",
        "--without-mingle",
    ]
    return [*argv, "--beat", "--scheduler", BEAT_SCHEDULER] if beat else argv


def wait_for_worker(proc: subprocess.Popen[bytes], log: Path, timeout: float = 60.0) -> None:
    """Wait until the Celery worker started as ``proc`` says it is ready in its log; a ServiceError
    naming the log if it exits or is not ready within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not is_alive(proc.pid):
            raise ServiceError(f"celery worker exited; see {log}")
        if b" ready." in log.read_bytes()[-20000:]:
            return
        time.sleep(0.2)
    raise ServiceError(f"celery worker not ready after {timeout:g} s; see {log}")


def ensure_workers(state: StateDir, name: str, *, concurrency: int | None = None, beat: bool = True) -> int:
    """A Celery worker (with beat when ``beat``: the periodic sweeps, the push loop, recurring
    campaigns) running the transfer tasks."""
    if running(state, "celery-worker"):
        return read_pid(state, "celery-worker") or 0
    argv = worker_argv(f"srcnet-{name}@%h", concurrency=concurrency, beat=beat)
    env, account = platform_process(state, name)
    return start_daemon(state, "celery-worker", argv, env=env, cwd=PROJECT_ROOT, user=account)


def web_url(state: StateDir) -> str:
    """The local web server's base URL (HTTPS only; verify with ``web_ca``)."""
    return f"https://127.0.0.1:{state.port('web')}"


def web_ca(state: StateDir) -> Path:
    """The CA the local web server's certificate is verified against (the local network's)."""
    return ca_certificate(state)


def web_argv(state: StateDir, port: int, account: str | None, *, service: str = "web") -> list[str]:
    """gunicorn serving the portal, the REST API and the FTS3 endpoint over HTTPS only, as a deployment does
    (role control_plane): the local host certificate (localhost, 127.0.0.1), the key a copy of its own for
    ``service``'s account; there is no plain-HTTP listener."""
    ensure_pki(state)
    cert, _ = host_credentials(state)
    return [
        str(VENV_BIN / "gunicorn"),
        # Stopped by PID: no control socket (its default path is under $HOME).
        "--no-control-socket",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        "2",
        "--timeout",
        "120",
        "--certfile",
        str(cert),
        "--keyfile",
        str(service_key(state, account, service)),
        "--access-logfile",
        "-",
        "srcnet.wsgi:application",
    ]


def ensure_web(state: StateDir, name: str) -> int:
    """Start the web server unless it runs; return its port (``web_url``: HTTPS)."""
    port = state.port("web")
    if running(state, "web") and port_open(port):
        return port
    env, account = platform_process(state, name)
    env["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_multiproc_dir(state, "web", account))
    argv = web_argv(state, port, account)
    pid = start_daemon(state, "web", argv, env=env, cwd=PROJECT_ROOT, user=account)
    wait_for_port(port, pid=pid, what="gunicorn", timeout=30)
    return port


def down(state: StateDir) -> list[str]:
    """Stop every process this state started, by PID; PostgreSQL last (others hold connections)."""
    from .monitoring import stop_monitoring

    stopped = stop_monitoring(state)
    # pytest-celery-worker: the test session's worker (tests/conftest.py), left behind if pytest was killed.
    for daemon in ("web", "fts3", "celery-worker", "pytest-celery-worker"):
        if stop_daemon(state, daemon, timeout=20):
            stopped.append(daemon)
    for site in known_sites(state):
        if stop_site(state, site):
            stopped.append(f"xrootd {site}")
    from .fireflies import stop_collector

    if stop_collector(state):  # after the sites that send it fireflies
        stopped.append("firefly collector")
    from .longhaul import stop_network

    # After the sites that ran in it: what is left in its namespaces (copies under way) goes with them.
    if stop_network(state):
        stopped.append("long-haul network")
    from .rucio import stop_all_rucio

    stopped += [f"rucio ({name})" for name in stop_all_rucio(state)]
    from .issuer import stop_issuer

    if stop_issuer(state):
        stopped.append("token issuer")
    if stop_redis(state):
        stopped.append("redis")
    if stop_postgres(state):
        stopped.append("postgres")
    return stopped
