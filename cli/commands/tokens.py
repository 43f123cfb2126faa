"""``srcnet tokens check [LANE|SITE]``: the token doctor (docs/tokens.md)."""

from __future__ import annotations

import argparse
from typing import Any

from ..context import Context, add_noun, add_verb
from ..exit_codes import ExitCode


def register(nouns: Any) -> None:
    verbs = add_noun(
        nouns, "tokens", "Storage tokens: check what copies will need of the issuer and the sites."
    )
    p = add_verb(
        verbs,
        "check",
        "Try, for each lane the plan uses (or one lane or endpoint), what a copy needs of the token issuer "
        "and the storage; one line per problem with what to change.",
        check_cmd,
        epilog="examples:\n  srcnet tokens check\n  srcnet tokens check SKA1-LOW_SDP:UKSRC_DISK\n"
        "  srcnet tokens check UKSRC_DISK\n"
        "exit code 0 when every check passed, 10 when at least one problem was found",
    )
    p.add_argument(
        "target",
        nargs="?",
        default="",
        metavar="LANE|SITE",
        help="SOURCE:DESTINATION endpoints, or one endpoint",
    )
    p.add_argument("--all", action="store_true", help="also print the checks that passed")


def check_cmd(ctx: Context, args: argparse.Namespace) -> int:
    report = ctx.client.get("/api/operations/tokens/check/", {"target": args.target} if args.target else None)
    if ctx.as_json:
        ctx.emit_object(report, [])
    else:
        for finding in report["findings"]:
            if finding["ok"] and not args.all:
                continue
            if finding["ok"]:
                ctx.out(f"ok       {finding['subject']}: {finding['message']}")
            else:
                fix = f"; fix: {finding['fix']}" if finding.get("fix") else ""
                ctx.out(f"PROBLEM  {finding['subject']}: {finding['message']}{fix}")
        problems = sum(not f["ok"] for f in report["findings"])
        ctx.info(f"srcnet: {len(report['findings'])} checks, {problems} problem(s)")
    return ExitCode.OK if report["ok"] else ExitCode.PROBLEMS_FOUND
