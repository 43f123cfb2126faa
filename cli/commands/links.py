"""``srcnet links list``: the network's links."""

from __future__ import annotations

import argparse
from typing import Any

from ..context import Context, Row, add_limit, add_noun, add_verb
from ..exit_codes import ExitCode
from ..output import human_rate, ms


def register(nouns: Any) -> None:
    verbs = add_noun(nouns, "links", "Network links between sites.")
    p = add_verb(verbs, "list", "List links.", list_cmd, epilog="example:\n  srcnet links list --site Perth")
    p.add_argument("--site", metavar="S", help="only links with an end at site S")
    p.add_argument("--kind", action="append", help="only links of this kind (repeatable)")
    p.add_argument("--vrf", help="only links carrying this VRF")
    add_limit(p)


def _row(link: Row) -> Row:
    return {
        **link,
        "capacity": human_rate(link.get("capacity_bps")),
        "rtt_ms": ms(link.get("rtt_ms")),
        "up": "yes" if link.get("is_up") else "no",
    }


def list_cmd(ctx: Context, args: argparse.Namespace) -> int:
    params = {"site": args.site, "kind": args.kind, "vrf": args.vrf}
    rows, count = ctx.client.paginate(
        "/api/topology/links/", {k: v for k, v in params.items() if v}, limit=args.limit
    )
    ctx.emit_list(
        rows,
        ["name", "a_end", "b_end", "kind", "capacity", "rtt_ms", "loss_rate", "up"],
        _row,
        count=count,
        what="links",
    )
    return ExitCode.OK
