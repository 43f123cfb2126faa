"""``srcnet topology import FILE`` / ``srcnet topology export [-f OUT]``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..context import Context, add_noun, add_verb
from ..errors import UsageError, ValidationFailed, format_field_errors
from ..exit_codes import ExitCode
from ..output import render_json, render_table


def register(nouns: Any) -> None:
    verbs = add_noun(nouns, "topology", "Import and export the network topology (YAML files).")
    p = add_verb(
        verbs,
        "import",
        "Import a topology file: all of it, or nothing.",
        import_cmd,
        epilog="example:\n  srcnet topology import topology/data/reference.yaml",
    )
    p.add_argument("file", metavar="FILE", help="the topology file (YAML)")
    p = add_verb(
        verbs,
        "export",
        "Write the topology as a file that `import` reads back.",
        export_cmd,
        output=False,
        epilog="example:\n  srcnet topology export -f topology.yaml",
    )
    p.add_argument("-f", "--file", dest="out", metavar="OUT", help="write to OUT instead of stdout")


def import_cmd(ctx: Context, args: argparse.Namespace) -> int:
    path = Path(args.file)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {args.file}: {getattr(exc, 'strerror', None) or exc}") from exc
    try:
        summary = ctx.client.post_text("/api/topology/import/", text, "application/x-yaml")
    except ValidationFailed as exc:
        ctx.info(_import_error(args.file, exc.body))
        return ExitCode.VALIDATION
    if ctx.as_json:
        ctx.out(render_json(summary))
    else:
        created, updated = summary.get("created", {}), summary.get("updated", {})
        kinds = sorted(set(created) | set(updated))
        rows = [{"kind": k, "created": created.get(k, 0), "updated": updated.get(k, 0)} for k in kinds]
        ctx.out(render_table(rows, ["kind", "created", "updated"]))
        ctx.out(f"paths computed: {summary.get('paths_computed', 0)}")
    for warning in summary.get("warnings", []):
        ctx.info(f"{args.file}: warning: {warning}")
    return ExitCode.OK


def _import_error(filename: str, body: Any) -> str:
    """``FILE: line N, field: reason`` from the import's 400 body ``{detail, line, field, message}``."""
    if isinstance(body, dict) and "detail" in body:
        where = [f"line {body['line']}" if body.get("line") else "", str(body.get("field") or "")]
        prefix = ", ".join(w for w in where if w)
        return f"{filename}: {prefix}: {body['detail']}" if prefix else f"{filename}: {body['detail']}"
    return f"{filename}: " + "; ".join(format_field_errors(body))


def export_cmd(ctx: Context, args: argparse.Namespace) -> int:
    text = ctx.client.get_text("/api/topology/export/")
    if args.out:
        try:
            Path(args.out).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write {args.out}: {exc.strerror or exc}") from exc
        ctx.info(f"srcnet: wrote {args.out} ({len(text.encode('utf-8'))} bytes)")
    else:
        ctx.stdout.write(text)
    return ExitCode.OK
