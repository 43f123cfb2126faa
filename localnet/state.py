"""The state folder of one local network: where its services keep data, logs, PIDs and ports.

A state folder is named (``demo``, ``test``); a second run with the same name reuses it. The ports the
services listen on are chosen once, free on loopback, and recorded in ``runtime.json`` so that later runs,
Django's settings and the tests all agree on them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pwd
import secrets
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from srcnet.local_state import (
    DJANGO_SECRET_KEY,
    POSTGRES_PASSWORD,
    PROJECT_ROOT,
    REDIS_PASSWORD,
    RUNTIME_FILE,
    SECRETS_DIR,
    SERVICE_USERS,
    default_state_root,
    runtime_for,
    secret_for,
)

RUCIO_DB_PASSWORD = "postgres-rucio-password"
# The bearer token of the firefly collector's /metrics and /flows (localnet/fireflies.py).
FIREFLIES_TOKEN = "fireflies-token"
__all__ = [
    "DJANGO_SECRET_KEY",
    "POSTGRES_PASSWORD",
    "PROJECT_ROOT",
    "REDIS_PASSWORD",
    "RUNTIME_FILE",
    "SECRETS_DIR",
    "SERVICE_USERS",
    "default_state_root",
    "runtime_for",
    "secret_for",
]


@dataclass(frozen=True)
class StateDir:
    """One named local network's folder and its runtime record."""

    path: Path

    @classmethod
    def named(cls, name: str) -> StateDir:
        root = default_state_root()
        state = cls(root / name)
        state.path.mkdir(parents=True, exist_ok=True)
        # Service accounts need to traverse it; contents keep their own modes.
        for folder in (root, state.path):
            folder.chmod(0o755)
        return state

    def sub(self, *parts: str) -> Path:
        folder = self.path.joinpath(*parts)
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    @property
    def runtime_path(self) -> Path:
        return self.path / RUNTIME_FILE

    def read_runtime(self) -> dict[str, Any]:
        try:
            return json.loads(self.runtime_path.read_text())
        except FileNotFoundError:
            return {}

    def write_runtime(self, runtime: dict[str, Any]) -> None:
        tmp = self.runtime_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(runtime, indent=2, sort_keys=True))
        tmp.chmod(0o644)
        tmp.replace(self.runtime_path)

    def update_runtime(self, key: str, value: Any) -> None:
        runtime = self.read_runtime()
        runtime[key] = value
        self.write_runtime(runtime)

    def secret(self, name: str) -> str:
        """The local network's secret ``name`` (``<state>/secrets/<name>``, readable by its owner only),
        made at random the first time. Processes of the platform get theirs in their environment."""
        folder = self.path / SECRETS_DIR
        folder.mkdir(mode=0o700, exist_ok=True)
        folder.chmod(0o700)
        path = folder / name
        if not path.exists():
            tmp = path.with_suffix(".tmp")
            with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as out:
                out.write(secrets.token_urlsafe(48))
            tmp.replace(path)
        return path.read_text().strip()

    def port(self, key: str) -> int:
        """The port recorded under ``key``, or a new free loopback port recorded now.

        A recorded port is kept even if something else holds it right now: the caller finds out when it
        starts the service, and a service of ours that is still running holds its own port. A new one is
        none that another state beside this one has recorded: that state's service may be stopped now, or
        listen in a network namespace of its own (a long-haul site), and still want its port back (two
        states handed one port found each other's service where they expected their own)."""
        ports = self.read_runtime().get("ports", {})
        if key in ports:
            return int(ports[key])
        taken = {int(p) for p in ports.values()} | ports_recorded_beside(self.path)
        port = free_port(avoid=taken)
        runtime = self.read_runtime()
        runtime.setdefault("ports", {})[key] = port
        self.write_runtime(runtime)
        return port


# Unix-domain socket paths are limited to 107 bytes (sun_path). XRootD's admin sockets and PostgreSQL's socket
# live in a short folder of their own, keyed by the state folder they serve, so neither depends on how deep
# the checkout (and so the state folder) lies.
SHORT_RUN_ROOT = Path("/tmp")


def short_run_dir(folder: Path, user: str | None = None) -> Path:
    """A short folder (``/tmp/srcnet-run-<uid>/<12 hex>``) for the sockets of the service whose state is
    ``folder``; owned by ``user`` when we are root and one is named."""
    parent = SHORT_RUN_ROOT / f"srcnet-run-{os.geteuid()}"
    parent.mkdir(mode=0o755, exist_ok=True)
    path = parent / hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:12]
    path.mkdir(mode=0o755, exist_ok=True)
    if user and os.geteuid() == 0:
        entry = pwd.getpwnam(user)
        os.chown(path, entry.pw_uid, entry.pw_gid)
    return path


def ports_recorded_beside(folder: Path) -> set[int]:
    """The ports recorded by the other states under ``folder``'s parent (the same state root)."""
    taken: set[int] = set()
    for runtime in folder.parent.glob(f"*/{RUNTIME_FILE}"):
        if runtime.parent == folder:
            continue
        try:
            recorded = json.loads(runtime.read_text()).get("ports", {})
            taken.update(int(port) for port in recorded.values())
        except (OSError, ValueError, AttributeError, TypeError):
            continue  # a state being written, or not a state's: nothing to keep clear of
    return taken


def free_port(avoid: set[int] | None = None) -> int:
    """A TCP port free on 127.0.0.1 now, outside the ephemeral range clients use (fewer collisions)."""
    avoid = avoid or set()
    for _ in range(200):
        with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        if port not in avoid:
            return int(port)
    raise RuntimeError("no free loopback port found")
