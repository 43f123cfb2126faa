#!/usr/bin/env python3
"""Replica and product state has one writer, replicas/lifecycle.py: this check (run by scripts/lint.sh)
fails naming every other line of the project's code that writes it.

What counts as a write, outside the lifecycle, tests and migrations:
- an assignment to ``<something>.state`` whose value names ``ReplicaState`` or ``ProductState``, or, in a
  module that imports ``Replica`` or ``DataProduct``, to ``<name>.state`` of a name that says it is one
  (replica, product, pin, copy, waiting, earlier...);
- a ``state=`` keyword (or a ``"state"`` key of ``defaults=``) naming ``ReplicaState``/``ProductState``, or
  given to ``create``, ``update``, ``get_or_create``, ``update_or_create`` or a constructor on a chain that
  starts at ``Replica``/``DataProduct`` or goes through ``.replicas``/``.downstream``;
- ``bulk_update`` of ``Replica``/``DataProduct`` rows with ``"state"`` among its fields.

Reading states (filters, comparisons) is everyone's: ``filter(state=...)`` and ``exclude(state=...)`` are
not writes. Standard library only."""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OWNER = Path("replicas/lifecycle.py")
SKIP_PARTS = {"tests", "migrations", ".venv", ".venv-rucio", "node_modules", "bench", "xrootd-plugins"}
STATE_ENUMS = {"ReplicaState", "ProductState"}
MODELS = {"Replica", "DataProduct"}
RELATED = {"replicas", "downstream"}
WRITERS = {"create", "update", "get_or_create", "update_or_create"}
OWN_NAMES = re.compile(r"(replica|product|pin|copy|waiting|earlier|upstream)", re.IGNORECASE)


def names_state_enum(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Name) and n.id in STATE_ENUMS for n in ast.walk(node))


def chain_is_ours(node: ast.AST) -> bool:
    """Whether a call's receiver chain starts at Replica/DataProduct or passes a related replicas manager."""
    while True:
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Attribute):
            if node.attr in RELATED:
                return True
            node = node.value
        elif isinstance(node, ast.Name):
            return node.id in MODELS
        else:
            return False


def imports_models(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(alias.name in MODELS for alias in node.names):
            return True
    return False


def state_targets(target: ast.AST) -> Iterator[ast.Attribute]:
    if isinstance(target, ast.Attribute) and target.attr == "state":
        yield target
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from state_targets(element)


def lifecycle_functions(root: Path) -> set[str]:
    """The lifecycle's own functions: calling them with a ``state=`` is the one way to write it."""
    tree = ast.parse((root / OWNER).read_text(encoding="utf-8"))
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}


def writes(tree: ast.Module, allowed: frozenset[str] | set[str] = frozenset()) -> Iterator[tuple[int, str]]:
    ours = imports_models(tree)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for attribute in state_targets(target):
                    owner = attribute.value
                    named = isinstance(owner, ast.Name) and OWN_NAMES.search(owner.id) is not None
                    if (node.value is not None and names_state_enum(node.value)) or (ours and named):
                        yield node.lineno, f"assigns {ast.unparse(attribute)}"
        elif isinstance(node, ast.Call):
            func = node.func
            method = (
                func.attr
                if isinstance(func, ast.Attribute)
                else func.id
                if isinstance(func, ast.Name)
                else ""
            )
            if method in ("filter", "exclude", "get", "first", "count", "exists") or method in allowed:
                continue
            constructor = isinstance(func, ast.Name) and func.id in MODELS
            on_chain = isinstance(func, ast.Attribute) and method in WRITERS and chain_is_ours(func.value)
            for keyword in node.keywords:
                value = keyword.value
                if keyword.arg == "state" and (names_state_enum(value) or constructor or on_chain):
                    yield node.lineno, f"writes state= in {method}()"
                if keyword.arg == "defaults" and isinstance(value, ast.Dict):
                    for key, item in zip(value.keys, value.values, strict=True):
                        is_state = isinstance(key, ast.Constant) and key.value == "state"
                        if is_state and (names_state_enum(item) or on_chain):
                            yield node.lineno, f"writes state in {method}(defaults=...)"
            if method == "bulk_update" and isinstance(func, ast.Attribute) and chain_is_ours(func.value):
                fields = node.args[1] if len(node.args) > 1 else None
                if fields is not None and "'state'" in ast.unparse(fields).replace('"', "'"):
                    yield node.lineno, "bulk_update of state"


def project_files(root: Path) -> Iterator[Path]:
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if SKIP_PARTS & set(relative.parts) or relative == OWNER:
            continue
        yield path


def main(argv: list[str]) -> int:
    root = Path(argv[1]).resolve() if len(argv) > 1 else ROOT
    found = []
    allowed = lifecycle_functions(root)
    for path in project_files(root):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for line, what in writes(tree, allowed):
            found.append(
                f"{path.relative_to(root)}:{line}: {what}: only {OWNER} writes replica and product state"
            )
    for message in found:
        print(message)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
