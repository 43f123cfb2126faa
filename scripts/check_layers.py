"""The layers of the platform's code, checked by ``make lint`` (docs/architecture.md, "Layers").

Every module of the platform is one of:

- **domain**: an app's models, services, selectors, tasks, the planner... Apps sit in ``LAYERS``, bottom
  first; a domain module imports only its own app's modules and those of apps in lower layers (never a peer
  of its own layer, never a higher one), and never an interface module. The rule holds for imports inside
  functions too: such an import hides nothing from this check.
- **interface**: what users reach (``INTERFACE``: views, the REST and FTS3 APIs, URLs, forms, the admin,
  management commands, the CLI) and the composition root (settings, URLs, the Celery app): they may import
  any domain module and each other.
- the planner and the simulator (``PURE``) are pure: they import neither Django nor any app, only each other.
- the transfertool clients (``CLIENTS``: the ``transfertools`` package) speak only the FTS3 REST protocol:
  they import neither Django nor any other module of the platform; any layer may import them.
- ``localnet`` is a development tool: it may import the platform, and no module of the platform imports it
  (nor the tests, nor the benchmarks).
- every import of one of the project's modules names a module that exists (mypy, told to ignore missing
  imports for the libraries without stubs, would let a forgotten importer of a moved module pass).

Run: ``.venv/bin/python scripts/check_layers.py``; exit 1 with one line per import that breaks a rule.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Bottom first. ``srcnet`` here is its shared base (roles, intervals, workers, the local state's reader,
# the Celery app that sends tasks);
# its composition root is interface (below).
LAYERS: list[set[str]] = [
    {"srcnet"},
    {"topology"},
    {"projects"},
    {"transfers"},
    {"replicas"},
    {"schedulers"},
    {"operations"},
    {"identity", "rules", "campaigns", "consistency"},
    {"monitoring"},
]
LAYER_OF = {app: index for index, apps in enumerate(LAYERS) for app in apps}
DEV_ONLY = {"localnet", "tests", "bench", "scripts"}
INTERFACE_APPS = {"cli"}
INTERFACE = re.compile(
    r"\.(views|urls|admin|forms|filtersets|middleware)$|\.(views|api|templatetags|management)(\.|$)"
    r"|^transfers\.fts3\.auth$"  # the FTS3 endpoint's request authentication
    r"|^srcnet$|^srcnet\.(settings|urls|fts3_urls|wsgi|celery|views|api)(\.|$)"
)
# The planner, the simulator and the physics and topology graph they compute with.
PURE = re.compile(r"^schedulers\.(planning|simulation)(\.|$)|^topology\.(physics|tpc_streams|graph|yamlio)$")
# The transfertool clients: the interface and the FTS3 REST client, below every app.
CLIENTS = "transfertools"
# The project's own packages (an import of anything else is a library's).
PROJECT = set(LAYER_OF) | DEV_ONLY | INTERFACE_APPS | {CLIENTS}


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    target: str  # the module imported
    line: int
    in_function: bool


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path) -> Iterator[Import]:
    """Every import of ``path`` (relative ones resolved), with whether it is inside a function; imports
    under ``if TYPE_CHECKING`` are for the type checker only and are left out."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))

    def walk(node: ast.AST, in_function: bool) -> Iterator[Import]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                yield from (i for n in child.orelse for i in walk(ast.Module([n], []), in_function))
                continue
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield Import(module, alias.name, child.lineno, in_function)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")
                    base = base[: len(base) - (child.level - 1)]
                    target = ".".join([*base, child.module] if child.module else base)
                else:
                    target = child.module or ""
                yield Import(module, target, child.lineno, in_function)
            yield from walk(child, inner)

    yield from walk(tree, False)


def app_of(module: str) -> str:
    return module.split(".")[0]


def is_interface(module: str) -> bool:
    return app_of(module) in INTERFACE_APPS or bool(INTERFACE.search(module))


def exists(module: str) -> bool:
    """Whether the project's ``module`` is a file or a package (a namespace one too) here."""
    path = ROOT.joinpath(*module.split("."))
    return path.with_suffix(".py").is_file() or path.is_dir()


def problem(found: Import) -> str | None:
    """What rule ``found`` breaks, or None."""
    source, target = found.module, found.target
    source_app, target_app = app_of(source), app_of(target)
    if target_app in PROJECT and not exists(target):
        # mypy's ignore_missing_imports would let it pass: a module moved and an importer forgotten.
        return f"no module {target} in the project"
    if source_app in DEV_ONLY:
        return None
    if target_app in DEV_ONLY:
        return f"imports the development tool or tests {target_app!r}"
    if source_app == CLIENTS:
        if target_app == "django" or (target_app in PROJECT and target_app != CLIENTS):
            return "the transfertool clients speak only the FTS3 REST protocol (no Django, no app)"
        return None
    if target_app == CLIENTS:
        return None
    if PURE.search(source):
        if target_app == "django" or (target_app in PROJECT and not PURE.search(target)):
            return "the planner and the simulator are pure (no Django, no app but the pure modules)"
        return None
    if target_app not in PROJECT or is_interface(source):
        return None
    if is_interface(target):
        return f"a domain module imports the interface module {target}"
    if source_app == target_app:
        return None
    if source_app not in LAYER_OF or target_app not in LAYER_OF:
        return f"{source_app} or {target_app} has no layer (scripts/check_layers.py LAYERS)"
    mine, theirs = LAYER_OF[source_app], LAYER_OF[target_app]
    if theirs > mine:
        return f"{source_app} (layer {mine}) imports the higher {target_app} (layer {theirs})"
    if theirs == mine:
        return f"{source_app} imports its peer {target_app} (layer {mine})"
    return None


def project_files() -> Iterator[Path]:
    # (the tests and benchmarks for the last rule: theirs must name modules that exist too)
    for app in sorted(set(LAYER_OF) | INTERFACE_APPS | {CLIENTS} | DEV_ONLY - {"scripts"}):
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path


def main() -> int:
    problems = []
    for path in project_files():
        for found in imports_of(path):
            why = problem(found)
            if why:
                where = "inside a function" if found.in_function else "at module level"
                problems.append(f"{path.relative_to(ROOT)}:{found.line}: {found.target} ({where}): {why}")
    for line in problems:
        print(line)
    if problems:
        print(f"{len(problems)} import(s) break the layers (docs/architecture.md, 'Layers')", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
