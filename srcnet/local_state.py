"""Where the local network keeps its secrets and ports, as Django's settings read them (``localnet``, the
development tool, makes and writes them; production code reads them here and never imports ``localnet``).

A deployment gives every value in the environment (``SRCNET_*``) and never reaches this: on one machine the
settings fall back to the named local state's files, read only, nothing made."""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import stat
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parent.parent
RUNTIME_FILE = "runtime.json"
SECRETS_DIR = "secrets"
DJANGO_SECRET_KEY = "django-secret-key"
REDIS_PASSWORD = "redis-password"
# The local PostgreSQL's password of the platform's role (localnet/postgres.py; Rucio's is in localnet.state).
POSTGRES_PASSWORD = "postgres-srcnet-password"
# Service accounts the daemons drop to when started as root; they must be able to reach the state folder.
SERVICE_USERS = ("postgres", "xrootd")


def _traversable_by(path: Path, user: str) -> bool:
    """True when ``user`` (not root) can walk down to ``path``: every ancestor has o+x or is theirs."""
    try:
        uid = pwd.getpwnam(user).pw_uid
    except KeyError:
        return True
    for part in [path, *path.parents]:
        if not part.exists():
            continue
        st = part.stat()
        mode = st.st_mode
        if st.st_uid == uid and mode & stat.S_IXUSR:
            continue
        if not mode & stat.S_IXOTH:
            return False
    return True


def default_state_root() -> Path:
    """``.state/`` in the checkout, unless the service accounts cannot reach it (a checkout under a
    private home folder); then a folder under /var/tmp keyed by the checkout's path, so it is stable."""
    override = os.environ.get("SRCNET_STATE_ROOT")
    if override:
        return Path(override).resolve()
    local = PROJECT_ROOT / ".state"
    if os.geteuid() != 0 or all(_traversable_by(PROJECT_ROOT, u) for u in SERVICE_USERS):
        return local
    key = hashlib.sha256(str(PROJECT_ROOT).encode()).hexdigest()[:12]
    return Path("/var/tmp/srcnet-state") / key


def secret_for(secret: str, name: str | None = None) -> str:
    """The secret ``secret`` of the state named by ``SRCNET_STATE`` (or ``name``), or ``""`` when there is
    none or it cannot be read (a process of another account). Read by Django's settings: nothing is made."""
    name = name or os.environ.get("SRCNET_STATE", "demo")
    try:
        return (default_state_root() / name / SECRETS_DIR / secret).read_text().strip()
    except OSError:
        return ""


def runtime_for(name: str | None = None) -> dict[str, Any]:
    """The runtime record of the state named by ``SRCNET_STATE`` (or ``name``), empty if none yet.

    Read by Django's settings: no folder is created here."""
    name = name or os.environ.get("SRCNET_STATE", "demo")
    path = default_state_root() / name / RUNTIME_FILE
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return {}
