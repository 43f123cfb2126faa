"""The application as the booted hosts receive it: a wheelhouse, built on the controller with the
project's own .venv pip, packed into one tar archive that the control_plane role copies to each host and
installs with ``pip install --no-index`` (the hosts have no internet, neither have production DTNs
always).

The dependencies' wheels are cached outside the checkout under ``/var/cache/srcnet-wheelhouse/<hash of
pyproject.toml>`` (built once; pip's own cache makes that quick); the project's wheel is built for every
run, so the hosts get the code of the checkout under test."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from localnet.state import PROJECT_ROOT

CACHE_ROOT = Path(os.environ.get("SRCNET_WHEELHOUSE_CACHE", "/var/cache/srcnet-wheelhouse"))
PIP = [sys.executable, "-m", "pip"]


def _dependencies_hash() -> str:
    recipe = (PROJECT_ROOT / "pyproject.toml").read_bytes() + sys.version.encode()
    return hashlib.sha256(recipe).hexdigest()[:16]


def dependency_wheels() -> Path:
    """The cached wheels of every runtime dependency (not the project itself)."""
    target = CACHE_ROOT / _dependencies_hash()
    if (target / ".complete").exists():
        return target
    CACHE_ROOT.mkdir(parents=True, exist_ok=True)
    with open(CACHE_ROOT / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / ".complete").exists():
            work = target.with_name(target.name + ".building")
            shutil.rmtree(work, ignore_errors=True)
            source = _source_copy(work.with_name(work.name + ".source"))
            subprocess.run(
                [*PIP, "wheel", "-q", "--wheel-dir", str(work), str(source)],
                check=True,
                capture_output=True,
                timeout=1200,
            )
            shutil.rmtree(source)
            for own in work.glob("srcnet-*.whl"):
                own.unlink()
            (work / ".complete").write_text("")
            work.rename(target)
    return target


def _source_copy(folder: Path) -> Path:
    """The checkout's files (tracked, and new ones git does not ignore) copied to ``folder``: setuptools
    builds in the source tree (build/, egg-info), which must not happen in the checkout."""
    listing = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.split(b"\0")
    for name in filter(None, (entry.decode() for entry in listing)):
        source = PROJECT_ROOT / name
        if source.is_file():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, folder / name)
    return folder


def release_archive(folder: Path) -> Path:
    """``folder/wheelhouse.tar``: the dependencies' wheels and a fresh wheel of the checkout."""
    own = folder / "own"
    shutil.rmtree(own, ignore_errors=True)
    source = _source_copy(folder / "source")
    subprocess.run(
        [*PIP, "wheel", "-q", "--no-deps", "--wheel-dir", str(own), str(source)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    archive = folder / "wheelhouse.tar"
    with tarfile.open(archive, "w") as tar:
        for wheel in sorted([*dependency_wheels().glob("*.whl"), *own.glob("*.whl")]):
            tar.add(wheel, arcname=wheel.name)
    return archive


if __name__ == "__main__":
    print(dependency_wheels())
