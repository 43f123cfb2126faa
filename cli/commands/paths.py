"""``srcnet paths list`` / ``srcnet paths show NAME``: end-to-end paths and their TCP figures."""

from __future__ import annotations

import argparse
from typing import Any

from ..context import Context, Row, add_limit, add_noun, add_verb
from ..errors import NotFound
from ..exit_codes import ExitCode
from ..output import human_rate, ms

COLUMNS = ["name", "from", "to", "rtt_ms", "bottleneck", "per_flow_ceiling", "streams_to_fill", "hops"]
SHOW_KEYS = [
    "id",
    "name",
    "from",
    "to",
    "vrf",
    "computed",
    "rtt_ms",
    "bottleneck",
    "loss_rate",
    "per_flow_ceiling",
    "streams_to_fill",
    "hop_count",
    "hops",
    "opex_eur_per_year",
]


def register(nouns: Any) -> None:
    verbs = add_noun(nouns, "paths", "End-to-end network paths (RTT, bottleneck, TCP per-flow ceiling).")
    p = add_verb(
        verbs,
        "list",
        "List paths from a site (and to a site).",
        list_cmd,
        epilog="The per-flow ceiling is window/RTT for a 1 GiB TCP window; streams to fill is the\n"
        "number of such flows that fill the bottleneck.\n\n"
        "examples:\n  srcnet paths list --from SKA1-Low\n"
        "  srcnet paths list --from SKA1-Low --to UKSRC -o json",
    )
    p.add_argument("--from", dest="source", metavar="SITE", help="paths starting at SITE")
    p.add_argument("--to", dest="destination", metavar="SITE", help="paths ending at SITE")
    p.add_argument("--vrf", help="only paths in this VRF")
    p.add_argument("--rtt-max", type=float, metavar="MS", help="only paths with RTT at most MS")
    add_limit(p)
    p = add_verb(
        verbs, "show", "Show one path by name.", show_cmd, epilog="example:\n  srcnet paths show NAME"
    )
    p.add_argument("name", metavar="NAME")


def _row(path: Row) -> Row:
    return {
        **path,
        "from": path.get("source"),
        "to": path.get("destination"),
        "rtt_ms": ms(path.get("rtt_ms")),
        "bottleneck": human_rate(path.get("capacity_bps")),
        "per_flow_ceiling": human_rate(path.get("per_flow_ceiling_bps")),
        "hops": " > ".join(path.get("hops") or []),
        "computed": "yes" if path.get("is_computed") else "no",
    }


def list_cmd(ctx: Context, args: argparse.Namespace) -> int:
    params = {
        "source": args.source,
        "destination": args.destination,
        "vrf": args.vrf,
        "rtt_max": args.rtt_max,
        "ordering": "rtt_ms",
    }
    rows, count = ctx.client.paginate(
        "/api/topology/paths/", {k: v for k, v in params.items() if v is not None}, limit=args.limit
    )
    ctx.emit_list(rows, COLUMNS, _row, count=count, what="paths")
    return ExitCode.OK


def show_cmd(ctx: Context, args: argparse.Namespace) -> int:
    rows, _ = ctx.client.paginate("/api/topology/paths/", {"name": args.name}, limit=1)
    if not rows:
        raise NotFound(f"no path named {args.name!r} (see `srcnet paths list`)")
    ctx.emit_object(rows[0], SHOW_KEYS, _row)
    return ExitCode.OK
