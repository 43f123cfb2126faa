"""What a deployment installs is the project's wheel: every Django app of the settings must be in it. An
app left out of pyproject.toml's package list works in the checkout (an editable install) and breaks every
deployed host at its first migration ("No module named ..."), as it once did."""

from __future__ import annotations

import fnmatch
import tomllib

from django.conf import settings

from localnet.state import PROJECT_ROOT


def test_every_local_app_is_in_the_wheel() -> None:
    patterns = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"][
        "find"
    ]["include"]
    local = [app for app in settings.INSTALLED_APPS if (PROJECT_ROOT / app.split(".")[0]).is_dir()]
    assert {"srcnet", "topology", "transfers"} <= set(local)
    missing = [app for app in local if not any(fnmatch.fnmatch(app.split(".")[0], p) for p in patterns)]
    assert not missing, f"apps not packaged (add them to [tool.setuptools.packages.find] include): {missing}"


def test_every_package_the_platform_imports_is_in_the_wheel() -> None:
    """Not only the apps: a package of plain modules the apps import (the transfertool clients) breaks a
    deployed host the same way when left out."""
    patterns = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"][
        "find"
    ]["include"]
    development = {"tests", "bench", "scripts"}
    packages = sorted(
        path.parent.name
        for path in PROJECT_ROOT.glob("*/__init__.py")
        if path.parent.name not in development and not path.parent.name.startswith(".")
    )
    assert {"transfers", "transfertools"} <= set(packages)
    missing = [name for name in packages if not any(fnmatch.fnmatch(name, p) for p in patterns)]
    assert not missing, f"packages not in the wheel (pyproject.toml's include): {missing}"
