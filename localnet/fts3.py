"""The embedded FTS3-compatible service on its own HTTPS port, as a production FTS3 runs (port 8446).

Gunicorn serves the FTS3 URL root with the local host certificate and asks clients for a certificate
(optional): Rucio's conveyor authenticates with one, the ``fts3`` client with a bearer token."""

from __future__ import annotations

from .processes import port_open, running, start_daemon, wait_for_port
from .stack import VENV_BIN, service_env
from .state import PROJECT_ROOT, StateDir


def ensure_fts3(state: StateDir, name: str, *, env_overrides: dict[str, str] | None = None) -> str:
    """Start the service unless it runs; return its https URL."""
    port = state.port("fts3")
    url = f"https://127.0.0.1:{port}"
    if running(state, "fts3") and port_open(port):
        return url
    pki = state.path / "pki"
    env = service_env(state, name)
    env["SRCNET_ROOT_URLCONF"] = "srcnet.fts3_urls"
    env.update(env_overrides or {})
    argv = [
        str(VENV_BIN / "gunicorn"),
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        "2",
        "--timeout",
        "120",
        "--certfile",
        str(pki / "hostcert.pem"),
        "--keyfile",
        str(pki / "hostkey.pem"),
        "--ca-certs",
        str(pki / "ca.pem"),
        "--cert-reqs",
        "1",
        "--access-logfile",
        "-",
        "srcnet.wsgi:application",
    ]
    pid = start_daemon(state, "fts3", argv, env=env, cwd=PROJECT_ROOT)
    wait_for_port(port, pid=pid, what="the FTS3 service", timeout=30)
    return url
