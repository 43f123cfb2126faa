"""Service accounts: commands run as their own account when we are root (initdb and xrootd refuse root),
the platform's own processes (Celery workers, the web server, the FTS3 service) run as the unprivileged
``srcnet`` account, and the Rucio server and its daemons as ``rucio``: never as root."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# The account the platform's processes run as in the local network (Ansible creates the same one).
SERVICE_ACCOUNT = "srcnet"
# The account of the local Rucio server and its daemons (they hold the conveyor's client certificate).
RUCIO_ACCOUNT = "rucio"


def as_root() -> bool:
    return os.geteuid() == 0


def as_user(user: str, argv: Sequence[str]) -> list[str]:
    """``argv`` run as ``user`` when we are root, unchanged otherwise."""
    if not as_root():
        return list(argv)
    return ["runuser", "-u", user, "--", *argv]


def chown_tree(path: Path, user: str) -> None:
    """Give ``path`` and everything below to ``user`` (only when root; otherwise it is ours already)."""
    if not as_root():
        return
    entry = pwd.getpwnam(user)
    for root, dirs, files in os.walk(path):
        for name in [*dirs, *files]:
            os.lchown(os.path.join(root, name), entry.pw_uid, entry.pw_gid)
    os.lchown(path, entry.pw_uid, entry.pw_gid)


def require_binary(name: str) -> str:
    found = shutil.which(name) or (f"/usr/bin/{name}" if Path(f"/usr/bin/{name}").exists() else None)
    if not found:
        raise FileNotFoundError(f"{name} is not installed: run scripts/bootstrap.sh")
    return found


def service_account(name: str = SERVICE_ACCOUNT) -> str | None:
    """The account a service runs as: ``name`` (a system account, created the first time; the platform's
    ``srcnet`` unless named) when we are root; None when we are not (it then runs as the invoking user,
    who is unprivileged)."""
    if not as_root():
        return None
    try:
        pwd.getpwnam(name)
    except KeyError:
        subprocess.run(
            [
                "useradd",
                "--system",
                "--user-group",
                "--home-dir",
                "/nonexistent",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                name,
            ],
            check=True,
            capture_output=True,
        )
    return name


def can_reach(user: str, path: Path) -> bool:
    """Whether ``user`` can read ``path`` (asked as that user: ACLs count, not just the mode bits)."""
    probe = subprocess.run(["runuser", "-u", user, "--", "test", "-r", str(path)], capture_output=True)
    return probe.returncode == 0


def grant_traversal(user: str, path: Path) -> list[Path]:
    """Let ``user`` reach ``path`` (a checkout under a private folder, e.g. one made by mktemp -d): each
    folder above it that ``user`` cannot search gets an ACL entry ``u:<user>:x`` (search only: it can
    list nothing there). Returns the folders changed; raises RuntimeError if it cannot be done."""
    if can_reach(user, path):
        return []
    setfacl = shutil.which("setfacl")
    if setfacl is None:
        raise RuntimeError(
            f"the account {user} cannot reach {path}, and setfacl is missing (apt install acl)"
        )
    changed = []
    # Folders only: an ACL entry on the file itself would replace "other"'s read with search alone.
    for folder in reversed(path.parents):
        probe = ["runuser", "-u", user, "--", "test", "-x", str(folder)]
        if subprocess.run(probe, capture_output=True).returncode:
            subprocess.run([setfacl, "-m", f"u:{user}:x", str(folder)], check=True, capture_output=True)
            changed.append(folder)
    if not can_reach(user, path):
        raise RuntimeError(f"the account {user} still cannot read {path} after granting search on {changed}")
    return changed


def drop_to(user: str | None) -> dict[str, Any]:
    """``subprocess.Popen`` keyword arguments that start a process as ``user`` (nothing when None)."""
    if user is None:
        return {}
    entry = pwd.getpwnam(user)
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}
