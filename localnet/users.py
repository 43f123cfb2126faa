"""Running service commands as their own account when we are root (initdb and xrootd refuse root)."""

from __future__ import annotations

import os
import pwd
import shutil
from collections.abc import Sequence
from pathlib import Path


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
