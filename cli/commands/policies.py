"""``srcnet policies list``: the replica placement policies."""

from __future__ import annotations

import argparse
from typing import Any

from ..context import Context, Row, add_limit, add_noun, add_verb
from ..exit_codes import ExitCode


def register(nouns: Any) -> None:
    verbs = add_noun(nouns, "policies", "Replica placement policies.")
    p = add_verb(verbs, "list", "List policies.", list_cmd, epilog="example:\n  srcnet policies list")
    p.add_argument("--telescope", metavar="T", help="only policies of telescope T")
    add_limit(p)


def _row(policy: Row) -> Row:
    weights = policy.get("effective_weights") or {}
    return {
        **policy,
        "active": "yes" if policy.get("is_active") else "no",
        "weights": ", ".join(f"{k}={float(v):.3g}" for k, v in sorted(weights.items())),
    }


def list_cmd(ctx: Context, args: argparse.Namespace) -> int:
    params = {"telescope": args.telescope} if args.telescope else None
    rows, count = ctx.client.paginate("/api/replicas/policies/", params, limit=args.limit)
    ctx.emit_list(
        rows,
        ["name", "telescope", "kind", "active", "weights", "parameters"],
        _row,
        count=count,
        what="policies",
    )
    return ExitCode.OK
