"""``srcnet sites list``: every node of the graph (telescopes, SRCs, distribution centres, PoPs)."""

from __future__ import annotations

import argparse
from typing import Any

from ..context import Context, add_limit, add_noun, add_verb
from ..exit_codes import ExitCode

KINDS = ("telescope", "src", "distribution_centre", "pop")


def register(nouns: Any) -> None:
    verbs = add_noun(nouns, "sites", "Sites: telescopes, regional centres, distribution centres, PoPs.")
    p = add_verb(
        verbs,
        "list",
        "List sites.",
        list_cmd,
        epilog="examples:\n  srcnet sites list --kind src --region europe\n  srcnet sites list -o json",
    )
    p.add_argument("--kind", choices=KINDS, action="append", help="only this kind (repeatable)")
    p.add_argument(
        "--region", action="append", metavar="R", help="only this region, e.g. europe (repeatable)"
    )
    p.add_argument("--search", metavar="Q", help="name or description contains Q")
    add_limit(p)


def list_cmd(ctx: Context, args: argparse.Namespace) -> int:
    params = {"kind": args.kind, "region": args.region, "q": args.search}
    rows, count = ctx.client.paginate(
        "/api/topology/sites/", {k: v for k, v in params.items() if v}, limit=args.limit
    )
    ctx.emit_list(rows, ["name", "kind", "region", "country", "vrf"], count=count, what="sites")
    return ExitCode.OK
