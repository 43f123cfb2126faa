"""``srcnet rules create|list|show|remove``: a scientist's requests for copies of products at SRCs."""

from __future__ import annotations

import argparse
import re
from typing import Any

from ..context import Context, Row, add_limit, add_noun, add_verb
from ..exit_codes import ExitCode
from ..output import render_table

LIST_COLUMNS = ["id", "owner", "state", "products", "rse_expression", "copies", "priority", "expires_at"]
SHOW_KEYS = [
    "id",
    "owner",
    "state",
    "selection",
    "rse_expression",
    "destinations",
    "copies",
    "activity",
    "priority",
    "expires_at",
    "comment",
    "rucio_account",
    "created",
]
COPY_COLUMNS = ["product", "endpoint", "site", "state", "upstream", "reason"]
UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
# The product filters of `rules create` and `products list`: option -> the API's filter name.
FILTER_OPTIONS = {
    "telescope": "telescope",
    "project": "project",
    "type": "product_type",
    "observation": "observation_id",
    "since": "created_after",
    "until": "created_before",
}


def lifetime(text: str) -> int:
    """``3600``, ``90m``, ``12h``, ``30d`` -> seconds (a negative one is left for the server to refuse)."""
    match = re.fullmatch(r"(-?\d{1,9})([smhd]?)", text.strip())
    if match is None:
        raise argparse.ArgumentTypeError(f"a lifetime like 3600, 90m, 12h or 30d, not {text!r}")
    return int(match.group(1)) * UNITS[match.group(2)]


def add_product_filters(parser: argparse.ArgumentParser) -> None:
    """The metadata a product is found by (every option narrows the search)."""
    group = parser.add_argument_group("product metadata")
    group.add_argument("--telescope", metavar="T")
    group.add_argument("--project", metavar="CODE", help="an observing project you are a member of")
    group.add_argument(
        "--type",
        metavar="KIND",
        help="visibilities, continuum_image, spectral_cube, pulsar_timing, calibration or other",
    )
    group.add_argument("--observation", metavar="ID", help="the observation (scheduling block) id")
    group.add_argument("--since", metavar="TIME", help="registered at or after TIME (ISO 8601)")
    group.add_argument("--until", metavar="TIME", help="registered before TIME (ISO 8601)")


def product_filters(args: argparse.Namespace) -> dict[str, str]:
    return {api: getattr(args, opt) for opt, api in FILTER_OPTIONS.items() if getattr(args, opt, None)}


def register(nouns: Any) -> None:
    verbs = add_noun(nouns, "rules", "Rules: copies of products at SRC storage, asked for by a scientist.")
    p = add_verb(
        verbs,
        "create",
        "Ask for copies of one product, or of every product matching metadata, at SRC storage.",
        create_cmd,
        epilog="examples:\n  srcnet rules create --product ska1-low:obs-0042 --src AUSRC --lifetime 30d\n"
        "  srcnet rules create --project AA01 --type continuum_image --rse-expression 'region=europe' "
        "--copies 2",
    )
    p.add_argument("--product", metavar="ID|DID", help="one product, by id or scope:name")
    add_product_filters(p)
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--rse-expression", metavar="EXPR", help="e.g. AUSRC_DISK, country=AU, region=europe")
    where.add_argument("--src", dest="srcs", action="append", metavar="SRC", help="an SRC name (repeatable)")
    p.add_argument("--copies", type=int, default=1, help="copies of each product (default 1)")
    p.add_argument("--lifetime", type=lifetime, help="3600, 90m, 12h or 30d (default: the role's longest)")
    p.add_argument("--activity", default="SKA User Request", help="default: SKA User Request")
    p.add_argument("--priority", type=int, default=3, help="1 (lowest) to 3 (5 for operators); default 3")
    p.add_argument("--comment", default="")
    p = add_verb(verbs, "list", "List your rules (an operator: every rule).", list_cmd)
    add_limit(p)
    p = add_verb(verbs, "show", "Show a rule with each copy it stands for.", show_cmd)
    p.add_argument("id", metavar="ID", type=int)
    p = add_verb(verbs, "remove", "Remove a rule (copies not started are forgotten).", remove_cmd)
    p.add_argument("id", metavar="ID", type=int)


def _row(rule: Row) -> Row:
    products = rule.get("products") or []
    shown = products[0] if len(products) == 1 else f"{len(products)} products"
    return {**rule, "products": shown}


def _emit_rule(ctx: Context, rule: Row) -> None:
    ctx.emit_object(rule, SHOW_KEYS)
    if not ctx.as_json:
        ctx.out("\nPRODUCTS\n" + "\n".join(rule.get("products") or []))
        ctx.out("\nCOPIES")
        ctx.out(render_table(rule.get("copies_made") or [], COPY_COLUMNS))


def create_cmd(ctx: Context, args: argparse.Namespace) -> int:
    payload: dict[str, Any] = {
        "copies": args.copies,
        "activity": args.activity,
        "priority": args.priority,
        "comment": args.comment,
    }
    if args.product:
        payload["product"] = args.product
    filters = product_filters(args)
    if filters:
        payload["filters"] = filters
    if args.rse_expression:
        payload["rse_expression"] = args.rse_expression
    if args.srcs:
        payload["srcs"] = args.srcs
    if args.lifetime is not None:
        payload["lifetime"] = args.lifetime
    _emit_rule(ctx, ctx.client.post("/api/rules/rules/", payload))
    return ExitCode.OK


def list_cmd(ctx: Context, args: argparse.Namespace) -> int:
    rows, count = ctx.client.paginate("/api/rules/rules/", {"ordering": "-created"}, limit=args.limit)
    ctx.emit_list(rows, LIST_COLUMNS, _row, count=count, what="rules")
    return ExitCode.OK


def show_cmd(ctx: Context, args: argparse.Namespace) -> int:
    _emit_rule(ctx, ctx.client.get(f"/api/rules/rules/{args.id}/"))
    return ExitCode.OK


def remove_cmd(ctx: Context, args: argparse.Namespace) -> int:
    ctx.client.delete(f"/api/rules/rules/{args.id}/")
    ctx.info(f"srcnet: rule {args.id} removed")
    return ExitCode.OK
