"""A private Redis (the Celery broker) on a loopback port, with no persistence: the broker holds only
messages about work whose durable state is in PostgreSQL. It asks every client for the state's own random
password (``<state>/secrets/redis-password``): another account on the machine cannot read or queue work."""

from __future__ import annotations

import os

from .processes import port_open, running, start_daemon, stop_daemon, wait_for_port
from .state import REDIS_PASSWORD, StateDir
from .users import require_binary


def ensure_redis(state: StateDir) -> int:
    port = state.port("redis")
    if not (running(state, "redis") and port_open(port)):
        folder = state.sub("redis")
        # The password in a file of its own (mode 0600), not on the command line every account can read.
        config = folder / "redis.conf"
        with open(os.open(config, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as out:
            out.write(f"requirepass {state.secret(REDIS_PASSWORD)}\n")
        pid = start_daemon(
            state,
            "redis",
            [
                require_binary("redis-server"),
                str(config),
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


def redis_url(state: StateDir) -> str:
    """The broker URL of the state's Redis, with its password."""
    return f"redis://:{state.secret(REDIS_PASSWORD)}@127.0.0.1:{state.port('redis')}/0"
