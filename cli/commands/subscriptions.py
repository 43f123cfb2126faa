"""``srcnet subscriptions create|list|show|remove``: standing rules for products registered from now on."""

from __future__ import annotations

import argparse
from typing import Any

from ..context import Context, add_limit, add_noun, add_verb
from ..exit_codes import ExitCode
from .rules import lifetime

LIST_COLUMNS = ["id", "owner", "name", "filters", "rse_expression", "srcs", "copies", "rules", "last_error"]
SHOW_KEYS = [
    "id",
    "owner",
    "name",
    "filters",
    "rse_expression",
    "srcs",
    "copies",
    "activity",
    "priority",
    "lifetime",
    "is_active",
    "rules",
    "last_error",
    "created",
]
FILTERS = {
    "telescope": "telescope",
    "project": "project",
    "type": "product_type",
    "observation": "observation_id",
}


def register(nouns: Any) -> None:
    verbs = add_noun(
        nouns, "subscriptions", "Subscriptions: a rule for every matching product registered from now on."
    )
    p = add_verb(
        verbs,
        "create",
        "Ask for every product registered from now on that matches the metadata.",
        create_cmd,
        epilog="example:\n  srcnet subscriptions create --project AA01 --type continuum_image --src AUSRC "
        "--lifetime 90d",
    )
    p.add_argument("--name", default="")
    group = p.add_argument_group("product metadata (at least one)")
    group.add_argument("--telescope", metavar="T")
    group.add_argument("--project", metavar="CODE")
    group.add_argument("--type", metavar="KIND")
    group.add_argument("--observation", metavar="ID")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--rse-expression", metavar="EXPR")
    where.add_argument("--src", dest="srcs", action="append", metavar="SRC", help="an SRC name (repeatable)")
    p.add_argument("--copies", type=int, default=1)
    p.add_argument("--lifetime", type=lifetime, help="of each rule: 3600, 90m, 12h or 30d")
    p.add_argument("--activity", default="SKA User Request")
    p.add_argument("--priority", type=int, default=3)
    p = add_verb(verbs, "list", "List your subscriptions (an operator: all).", list_cmd)
    add_limit(p)
    p = add_verb(verbs, "show", "Show a subscription and the rules it made.", show_cmd)
    p.add_argument("id", metavar="ID", type=int)
    p = add_verb(verbs, "remove", "Remove a subscription (the rules it made stay).", remove_cmd)
    p.add_argument("id", metavar="ID", type=int)


def create_cmd(ctx: Context, args: argparse.Namespace) -> int:
    payload: dict[str, Any] = {
        "name": args.name,
        "filters": {api: getattr(args, opt) for opt, api in FILTERS.items() if getattr(args, opt)},
        "copies": args.copies,
        "activity": args.activity,
        "priority": args.priority,
    }
    if args.rse_expression:
        payload["rse_expression"] = args.rse_expression
    if args.srcs:
        payload["srcs"] = args.srcs
    if args.lifetime is not None:
        payload["lifetime"] = args.lifetime
    ctx.emit_object(ctx.client.post("/api/rules/subscriptions/", payload), SHOW_KEYS)
    return ExitCode.OK


def list_cmd(ctx: Context, args: argparse.Namespace) -> int:
    rows, count = ctx.client.paginate("/api/rules/subscriptions/", {"ordering": "-created"}, limit=args.limit)
    ctx.emit_list(rows, LIST_COLUMNS, count=count, what="subscriptions")
    return ExitCode.OK


def show_cmd(ctx: Context, args: argparse.Namespace) -> int:
    ctx.emit_object(ctx.client.get(f"/api/rules/subscriptions/{args.id}/"), SHOW_KEYS)
    return ExitCode.OK


def remove_cmd(ctx: Context, args: argparse.Namespace) -> int:
    ctx.client.delete(f"/api/rules/subscriptions/{args.id}/")
    ctx.info(f"srcnet: subscription {args.id} removed")
    return ExitCode.OK
