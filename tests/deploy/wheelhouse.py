"""The application as the booted hosts receive it: a wheelhouse, built on the controller with the
project's own .venv pip, packed into one tar archive that the srcnet_app role copies to each host and
installs with ``pip install --no-index`` (the hosts have no internet).

The wheels are built from the committed tree (HEAD, exported with git archive): a release is a commit, not
what is half-edited in a shared checkout. The dependencies' wheels are cached outside the checkout under
``/var/cache/srcnet-wheelhouse/<hash of HEAD's pyproject.toml>`` (built once; pip's own cache makes that
quick); the project's own wheel is built for every run."""

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
    committed = subprocess.run(
        ["git", "show", "HEAD:pyproject.toml"], cwd=PROJECT_ROOT, capture_output=True, check=True, timeout=60
    ).stdout
    recipe = committed + sys.version.encode()
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
    """The committed tree (HEAD) exported to ``folder``: a release is a commit, not whatever is half-edited
    in the checkout, and setuptools builds in the source tree (build/, egg-info), never in the checkout."""
    folder.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "archive", "--format=tar", "HEAD"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        check=True,
        timeout=120,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True, timeout=120)
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
