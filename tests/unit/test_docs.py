"""The docs a newcomer reads first stay true to the code: docs/architecture.md has a row for every app of the
project that Django has installed (and none for an app that is not), and every relative link in the
repository's Markdown leads to a file that exists and, with a #fragment, to one of its headings. No
database: the app registry and the files only."""

from __future__ import annotations

import os
import re
from pathlib import Path

from django.apps import apps

ROOT = Path(__file__).resolve().parents[2]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
APPS_SECTION = "## The apps"
# A row of the apps table: its first cell is the app's package name in backticks.
APP_ROW = re.compile(r"^\|\s*`([A-Za-z_][\w.]*)`\s*\|")
# Folders that hold no Markdown of the project's own.
SKIPPED_DIRS = {"node_modules", "build", "test-artifacts", "staticfiles", "__pycache__"}
LINK = re.compile(r"\]\(([^()\s]+)\)")


def project_apps() -> set[str]:
    """The installed apps whose package is a folder at the repository's root: the project's own, not
    Django's or a third party's (those live in the virtual environment)."""
    return {c.name for c in apps.get_app_configs() if Path(c.path).resolve().parent == ROOT}


def described_apps() -> list[str]:
    """The apps docs/architecture.md's table names, in its "The apps" section."""
    lines = ARCHITECTURE.read_text(encoding="utf-8").splitlines()
    assert APPS_SECTION in lines, f"docs/architecture.md has no {APPS_SECTION!r} section"
    names = []
    for line in lines[lines.index(APPS_SECTION) + 1 :]:
        if line.startswith("## "):
            break
        match = APP_ROW.match(line)
        if match:
            names.append(match.group(1))
    return names


def test_the_project_apps_are_found() -> None:
    # Guards the test itself: if the registry or the layout changed, finding nothing must not pass.
    assert {"srcnet", "topology", "replicas", "transfers", "schedulers"} <= project_apps()


def test_architecture_describes_every_installed_app() -> None:
    missing = sorted(project_apps() - set(described_apps()))
    assert not missing, (
        f"docs/architecture.md, {APPS_SECTION!r}: no row for the installed app(s) {', '.join(missing)}: "
        "add a row whose first cell is the app's package name in backticks, with what it owns"
    )


def test_architecture_describes_no_app_that_is_not_installed() -> None:
    names = described_apps()
    extra = sorted(set(names) - project_apps())
    assert not extra, (
        f"docs/architecture.md, {APPS_SECTION!r}: row(s) for {', '.join(extra)}, which "
        "settings.INSTALLED_APPS does not install (a folder that is not an app goes under 'Beside the apps')"
    )
    twice = sorted({name for name in names if names.count(name) > 1})
    assert not twice, f"docs/architecture.md, {APPS_SECTION!r}: more than one row for {', '.join(twice)}"


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().replace("`", "").lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _outside_code(path: Path) -> list[tuple[int, str]]:
    """The file's lines outside fenced code blocks, numbered from 1."""
    lines, fenced = [], False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            lines.append((number, line))
    return lines


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for _, line in _outside_code(path):
        heading = re.match(r"#{1,6} (.+)", line)
        if heading:
            base = slug(heading.group(1))
            found.add(base if base not in seen else f"{base}-{seen[base]}")
            seen[base] = seen.get(base, 0) + 1
    return found


def markdown_files() -> list[Path]:
    files = []
    for folder, dirs, names in os.walk(ROOT):
        dirs[:] = [
            d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS and not d.endswith(".egg-info")
        ]
        files += [Path(folder) / name for name in names if name.endswith(".md")]
    return sorted(files)


def test_relative_links_in_the_docs_resolve() -> None:
    files = markdown_files()
    assert ROOT / "docs" / "architecture.md" in files
    broken = []
    for path in files:
        for number, line in _outside_code(path):
            for target in LINK.findall(line):
                if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...
                    continue
                name, _, fragment = target.partition("#")
                linked = (path.parent / name).resolve() if name else path
                where = f"{path.relative_to(ROOT)}:{number}: {target}"
                if not linked.exists():
                    broken.append(f"{where} (no such file)")
                elif fragment and linked.suffix == ".md" and fragment not in anchors(linked):
                    broken.append(f"{where} (no such heading in {os.path.relpath(linked, ROOT)})")
    assert not broken, "links that lead nowhere:\n" + "\n".join(broken)
