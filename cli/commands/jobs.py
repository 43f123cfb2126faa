"""``srcnet jobs show JOB_ID`` / ``srcnet jobs cancel JOB_ID``: transfer jobs."""

from __future__ import annotations

import argparse
from typing import Any

from ..context import Context, Row, add_noun, add_verb
from ..exit_codes import ExitCode
from ..output import render_json, render_kv, render_table
from .transfers import COLUMNS as FILE_COLUMNS
from .transfers import _row as file_row
from .transfers import job_uuid

SHOW_KEYS = [
    "job_id",
    "state",
    "priority",
    "activity",
    "verify_checksum",
    "submitter",
    "created",
    "updated",
    "finished",
    "files",
    "reason",
]


def register(nouns: Any) -> None:
    verbs = add_noun(nouns, "jobs", "Transfer jobs (a set of file copies submitted together).")
    p = add_verb(
        verbs, "show", "Show a job and its files.", show_cmd, epilog="example:\n  srcnet jobs show JOB_ID"
    )
    p.add_argument("job_id", metavar="JOB_ID", type=job_uuid)
    p = add_verb(
        verbs,
        "cancel",
        "Cancel a job's unfinished files (operators only).",
        cancel_cmd,
        epilog="example:\n  srcnet jobs cancel JOB_ID",
    )
    p.add_argument("job_id", metavar="JOB_ID", type=job_uuid)


def _emit_job(ctx: Context, job: Row) -> None:
    if ctx.as_json:
        ctx.out(render_json(job))
        return
    files = job.get("files") or []
    ctx.out(render_kv({**job, "files": len(files)}, SHOW_KEYS))
    ctx.out("\nFILES")
    ctx.out(render_table([file_row(f) for f in files], FILE_COLUMNS))


def show_cmd(ctx: Context, args: argparse.Namespace) -> int:
    _emit_job(ctx, ctx.client.get(f"/api/transfers/jobs/{args.job_id}/"))
    return ExitCode.OK


def cancel_cmd(ctx: Context, args: argparse.Namespace) -> int:
    job = ctx.client.post(f"/api/transfers/jobs/{args.job_id}/cancel/")
    ctx.info(f"srcnet: job {args.job_id} is {job.get('state')}")
    _emit_job(ctx, job)
    return ExitCode.OK
