"""``srcnet products list|show|create|push``: data products and their replicas."""

from __future__ import annotations

import argparse
from typing import Any

from ..context import Context, Row, add_limit, add_noun, add_verb
from ..exit_codes import ExitCode
from ..output import human_bytes, render_json, render_kv, render_table
from .rules import add_product_filters, product_filters

STATES = ("registered", "placing", "placed", "failed")
LIST_COLUMNS = [
    "id",
    "did",
    "telescope",
    "state",
    "priority",
    "size",
    "files",
    "replicas",
    "created",
    "project",
]
SHOW_KEYS = [
    "id",
    "did",
    "telescope",
    "source",
    "project",
    "observation_id",
    "product_type",
    "proprietary_until",
    "state",
    "priority",
    "size",
    "created",
    "deadline",
    "predicted_arrival",
    "arrival_note",
    "submitted_prediction",
]
REPLICA_COLUMNS = ["endpoint", "site", "state", "policy", "reason"]
# Each replica still to come (planned or copying, not at the SDP): when it is predicted and why then.
ARRIVAL_COLUMNS = ["endpoint", "state", "predicted_arrival", "arrival_note"]
TRANSFER_COLUMNS = ["job_id", "state", "activity", "sources", "destinations", "files", "done", "created"]
FILE_COLUMNS = ["name", "size", "adler32"]


def register(nouns: Any) -> None:
    verbs = add_noun(nouns, "products", "Data products registered at a telescope's SDP, and their replicas.")
    p = add_verb(
        verbs,
        "list",
        "List products.",
        list_cmd,
        epilog="examples:\n  srcnet products list --telescope SKA1-Low --state placing\n"
        "  srcnet products list --project AA01 --type continuum_image --since 2026-11-01",
    )
    add_product_filters(p)
    p.add_argument("--state", choices=STATES, action="append", help="(repeatable)")
    p.add_argument("--search", metavar="Q", help="name or scope contains Q (or scope:name)")
    add_limit(p)
    p = add_verb(
        verbs,
        "show",
        "Show a product with its files and replicas.",
        show_cmd,
        epilog="example:\n  srcnet products show 42",
    )
    p.add_argument("id", metavar="ID", type=int)
    p = add_verb(
        verbs,
        "create",
        "Register a product whose files the SDP has written.",
        create_cmd,
        epilog="example:\n  srcnet products create --scope ska1-low --name obs-001 --telescope SKA1-Low \\\n"
        "      --file vis.ms.tar:1073741824:0a1b2c3d --file psf.fits:52428800:1f2e3d4c",
    )
    p.add_argument("--scope", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--telescope", required=True, metavar="T")
    p.add_argument("--priority", type=int, default=3, help="1 (lowest) to 5 (highest); default 3")
    p.add_argument(
        "--source", metavar="ENDPOINT", help="source storage endpoint (default: the telescope's SDP)"
    )
    p.add_argument(
        "--project",
        metavar="CODE",
        help="the observing project: proprietary to its members for its period (default: none, public)",
    )
    p.add_argument("--type", metavar="KIND", help="the product type (see `products list --help`)")
    p.add_argument("--observation", metavar="ID", help="the observation (scheduling block) it comes from")
    p.add_argument(
        "--file",
        dest="files",
        action="append",
        required=True,
        type=file_spec,
        metavar="NAME:SIZE:ADLER32",
        help="a file: name, size in bytes, adler32 (8 hex); repeatable",
    )
    p = add_verb(
        verbs,
        "push",
        "Place a product by its telescope's policy and submit its transfers.",
        push_cmd,
        epilog="example:\n  srcnet products push 42",
    )
    p.add_argument("id", metavar="ID", type=int)


def file_spec(text: str) -> dict[str, Any]:
    """``name:size:adler32`` -> the API's file object (the name may itself hold colons)."""
    parts = text.rsplit(":", 2)
    if len(parts) != 3 or not parts[0]:
        raise argparse.ArgumentTypeError(f"expected NAME:SIZE:ADLER32, got {text!r}")
    name, size, adler32 = parts
    try:
        size_bytes = int(size)
    except ValueError:
        raise argparse.ArgumentTypeError(f"size must be a whole number of bytes in {text!r}") from None
    return {"name": name, "size_bytes": size_bytes, "adler32": adler32}


def _row(product: Row) -> Row:
    return {
        **product,
        "size": human_bytes(product.get("size_bytes")),
        "files": len(product.get("files") or []),
        "replicas": len(product.get("replicas") or []),
    }


def list_cmd(ctx: Context, args: argparse.Namespace) -> int:
    params = {**product_filters(args), "state": args.state, "q": args.search, "ordering": "-created"}
    rows, count = ctx.client.paginate(
        "/api/replicas/products/", {k: v for k, v in params.items() if v}, limit=args.limit
    )
    ctx.emit_list(rows, LIST_COLUMNS, _row, count=count, what="products")
    return ExitCode.OK


def _transfer_row(job: Row) -> Row:
    return {
        **job,
        "sources": ",".join(job.get("sources") or []),
        "destinations": ",".join(job.get("destinations") or []),
        "done": f"{job.get('finished_files', 0)}/{job.get('files', 0)}",
    }


def _emit_product(ctx: Context, product: Row) -> None:
    if ctx.as_json:
        ctx.out(render_json(product))
        return
    ctx.out(render_kv(_row(product), SHOW_KEYS))
    ctx.out("\nFILES")
    files = [{**f, "size": human_bytes(f.get("size_bytes"))} for f in product.get("files") or []]
    ctx.out(render_table(files, FILE_COLUMNS))
    ctx.out("\nREPLICAS")
    ctx.out(render_table(product.get("replicas") or [], REPLICA_COLUMNS))
    # The server gives a note (and a time when it can) to each pending replica, "" to the others.
    pending = [
        r for r in product.get("replicas") or [] if r.get("arrival_note") or r.get("predicted_arrival")
    ]
    if pending:
        ctx.out("\nARRIVALS")
        ctx.out(render_table(pending, ARRIVAL_COLUMNS))
    if "transfers" in product:
        ctx.out("\nTRANSFERS")
        ctx.out(render_table([_transfer_row(t) for t in product["transfers"]], TRANSFER_COLUMNS))


def show_cmd(ctx: Context, args: argparse.Namespace) -> int:
    _emit_product(ctx, ctx.client.get(f"/api/replicas/products/{args.id}/"))
    return ExitCode.OK


def create_cmd(ctx: Context, args: argparse.Namespace) -> int:
    payload: dict[str, Any] = {
        "scope": args.scope,
        "name": args.name,
        "telescope": args.telescope,
        "priority": args.priority,
        "files": args.files,
    }
    if args.source:
        payload["source"] = args.source
    if args.project:
        payload["project"] = args.project
    if args.type:
        payload["product_type"] = args.type
    if args.observation:
        payload["observation_id"] = args.observation
    product = ctx.client.post("/api/replicas/products/", payload)
    ctx.info(f"srcnet: created product {product.get('id')} ({product.get('did')})")
    _emit_product(ctx, product)
    return ExitCode.OK


def push_cmd(ctx: Context, args: argparse.Namespace) -> int:
    replicas = ctx.client.post(f"/api/replicas/products/{args.id}/push/")
    ctx.emit_list(replicas or [], ["id", *REPLICA_COLUMNS])
    return ExitCode.OK
