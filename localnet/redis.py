"""A private Redis (the Celery broker) on a loopback port, with no persistence: the broker holds only
messages about work whose durable state is in PostgreSQL."""

from __future__ import annotations

from .processes import port_open, running, start_daemon, stop_daemon, wait_for_port
from .state import StateDir
from .users import require_binary


def ensure_redis(state: StateDir) -> int:
    port = state.port("redis")
    if not (running(state, "redis") and port_open(port)):
        folder = state.sub("redis")
        pid = start_daemon(
            state,
            "redis",
            [
                require_binary("redis-server"),
                "--bind",
                "127.0.0.1",
                "--port",
                str(port),
                "--dir",
                str(folder),
                "--save",
                "",
                "--appendonly",
                "no",
                "--protected-mode",
                "no",
            ],
        )
        wait_for_port(port, pid=pid, what="redis-server")
    return port


def stop_redis(state: StateDir) -> bool:
    return stop_daemon(state, "redis")
