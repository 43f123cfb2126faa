"""``srcnet storage check|checks|findings|remove-dark|keep-dark``: storage consistency checks
(docs/reliability.md, "Storage consistency")."""

from __future__ import annotations

import argparse
import time
from typing import Any

from ..context import Context, Row, add_limit, add_noun, add_verb
from ..errors import WatchTimeout
from ..exit_codes import ExitCode

CHECK_COLUMNS = [
    "id",
    "endpoint",
    "mode",
    "state",
    "started",
    "files_checked",
    "lost",
    "corrupt",
    "dark",
    "unchecked",
]
CHECK_KEYS = [
    *CHECK_COLUMNS,
    "finished",
    "files_listed",
    "checksums_read",
    "requested_by",
    "error_count",
    "errors",
]
FINDING_COLUMNS = ["id", "check", "endpoint", "kind", "path", "product", "action"]
POLL_SECONDS = 2.0


def register(nouns: Any) -> None:
    verbs = add_noun(
        nouns, "storage", "Storage consistency: what each endpoint holds against what the platform believes."
    )
    p = add_verb(
        verbs,
        "check",
        "Start a consistency check of one storage endpoint (operators); with --wait, follow it to its end.",
        check_cmd,
        epilog="examples:\n  srcnet storage check UKSRC_DISK\n"
        "  srcnet storage check UKSRC_DISK --mode stat --checksum-fraction 1 --wait\n"
        "with --wait: exit code 0 when the check found nothing, 10 when it found lost, corrupt or dark\n"
        "files or could not read part of the storage, 8 when --timeout expired first",
    )
    p.add_argument("endpoint", metavar="ENDPOINT", help="a storage endpoint's name")
    p.add_argument(
        "--mode", choices=["list", "stat"], help="list the storage (default) or stat known replicas"
    )
    p.add_argument(
        "--checksum-fraction",
        type=float,
        metavar="F",
        help="share of whole files whose adler32 is re-read (0-1)",
    )
    p.add_argument("--dark-grace-hours", type=float, metavar="H", help="a dark file is at least H hours old")
    p.add_argument("--wait", action="store_true", help="wait for the check to end and print it")
    p.add_argument(
        "--timeout", type=float, default=3600.0, metavar="S", help="with --wait: give up after S s"
    )
    p = add_verb(verbs, "checks", "List consistency checks, newest first.", checks_cmd)
    p.add_argument("--endpoint", metavar="NAME", help="only this endpoint's")
    add_limit(p)
    p = add_verb(verbs, "findings", "List what checks found.", findings_cmd)
    p.add_argument("--check", type=int, metavar="ID", help="only this check's")
    p.add_argument("--endpoint", metavar="NAME", help="only this endpoint's")
    p.add_argument("--kind", choices=["lost", "corrupt", "dark"])
    p.add_argument("--open", action="store_true", help="only those not acted on yet")
    add_limit(p)
    p = add_verb(
        verbs, "remove-dark", "Remove a dark file from its storage (operators; audited).", remove_cmd
    )
    p.add_argument("finding", type=int, metavar="FINDING", help="the dark file's finding id")
    p = add_verb(verbs, "keep-dark", "Keep a dark file (operators; audited).", keep_cmd)
    p.add_argument("finding", type=int, metavar="FINDING", help="the dark file's finding id")


def check_cmd(ctx: Context, args: argparse.Namespace) -> int:
    payload = {
        "endpoint": args.endpoint,
        "mode": args.mode,
        "checksum_fraction": args.checksum_fraction,
        "dark_grace_hours": args.dark_grace_hours,
    }
    check = ctx.client.post("/api/consistency/checks/", {k: v for k, v in payload.items() if v is not None})
    if not args.wait:
        ctx.emit_object(check, CHECK_KEYS)
        return ExitCode.OK
    deadline = time.monotonic() + args.timeout
    while check["state"] == "running":
        if time.monotonic() > deadline:
            ctx.emit_object(check, CHECK_KEYS)
            raise WatchTimeout(f"check {check['id']} still running after {args.timeout:g} s")
        time.sleep(POLL_SECONDS)
        check = ctx.client.get(f"/api/consistency/checks/{check['id']}/")
    ctx.emit_object(check, CHECK_KEYS)
    found = check["lost"] + check["corrupt"] + check["dark"] + check["unchecked"]
    return ExitCode.OK if check["state"] == "complete" and not found else ExitCode.PROBLEMS_FOUND


def checks_cmd(ctx: Context, args: argparse.Namespace) -> int:
    params = {"endpoint": args.endpoint} if args.endpoint else {}
    rows, count = ctx.client.paginate("/api/consistency/checks/", params, limit=args.limit)
    ctx.emit_list(rows, CHECK_COLUMNS, None, count=count, what="checks")
    return ExitCode.OK


def findings_cmd(ctx: Context, args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"check": args.check, "endpoint": args.endpoint, "kind": args.kind}
    if args.open:
        params["open"] = 1
    rows, count = ctx.client.paginate(
        "/api/consistency/findings/", {k: v for k, v in params.items() if v is not None}, limit=args.limit
    )
    ctx.emit_list(rows, FINDING_COLUMNS, _finding_row, count=count, what="findings")
    return ExitCode.OK


def _finding_row(finding: Row) -> Row:
    return {**finding, "product": finding.get("product") or "", "action": finding.get("action") or "-"}


def remove_cmd(ctx: Context, args: argparse.Namespace) -> int:
    ctx.emit_object(ctx.client.post(f"/api/consistency/findings/{args.finding}/remove/"), FINDING_COLUMNS)
    return ExitCode.OK


def keep_cmd(ctx: Context, args: argparse.Namespace) -> int:
    ctx.emit_object(ctx.client.post(f"/api/consistency/findings/{args.finding}/keep/"), FINDING_COLUMNS)
    return ExitCode.OK
