"""The embedded FTS3-compatible service on its own HTTPS port, as a production FTS3 runs (port 8446).

Gunicorn serves the FTS3 URL root with the local host certificate and asks clients for a certificate
(optional): Rucio's conveyor authenticates with one, or with its token issuer's token for the service's
host (``SRCNET_FTS3_TOKEN_AUDIENCES``), the ``fts3`` client with a bearer token."""

from __future__ import annotations

from pathlib import Path

from .pki import service_key as copy_service_key
from .processes import port_open, running, start_daemon, wait_for_port
from .stack import VENV_BIN, metrics_multiproc_dir, platform_process
from .state import PROJECT_ROOT, StateDir


def service_key(state: StateDir, account: str | None) -> Path:
    """The host key as the FTS3 service's account may read it (a copy of its own)."""
    return copy_service_key(state, account, "fts3")


# The host the local FTS3 services listen on, and so the audience Rucio's conveyor asks tokens for.
FTS3_HOST = "127.0.0.1"


def token_audience_env() -> dict[str, str]:
    """The service's setting that takes the issuer tokens Rucio's conveyor presents: their audience is the
    host of the service's URL, as Rucio asks its issuer (scope ``fts``)."""
    return {"SRCNET_FTS3_TOKEN_AUDIENCES": FTS3_HOST}


def ensure_fts3(state: StateDir, name: str, *, env_overrides: dict[str, str] | None = None) -> str:
    """Start the service unless it runs; return its https URL."""
    port = state.port("fts3")
    url = f"https://{FTS3_HOST}:{port}"
    if running(state, "fts3") and port_open(port):
        return url
    pki = state.path / "pki"
    env, account = platform_process(state, name)
    env["SRCNET_ROOT_URLCONF"] = "srcnet.fts3_urls"
    env.update(token_audience_env())
    key = service_key(state, account)
    env["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_multiproc_dir(state, "fts3", account))
    env.update(env_overrides or {})
    argv = [
        str(VENV_BIN / "gunicorn"),
        # Stopped by PID: no control socket (its default path is under $HOME).
        "--no-control-socket",
        "--bind",
        f"{FTS3_HOST}:{port}",
        "--workers",
        "2",
        "--timeout",
        "120",
        "--certfile",
        str(pki / "hostcert.pem"),
        "--keyfile",
        str(key),
        "--ca-certs",
        str(pki / "ca.pem"),
        "--cert-reqs",
        "1",
        "--access-logfile",
        "-",
        "srcnet.wsgi:application",
    ]
    pid = start_daemon(state, "fts3", argv, env=env, cwd=PROJECT_ROOT, user=account)
    wait_for_port(port, pid=pid, what="the FTS3 service", timeout=30)
    return url
