"""``srcnet transfers list`` / ``srcnet transfers watch``: file transfers and a live progress display."""

from __future__ import annotations

import argparse
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from ..context import Context, Row, add_limit, add_noun, add_verb, positive_float
from ..exit_codes import ExitCode
from ..output import human_bytes, human_rate

FILE_STATES = ("SUBMITTED", "ACTIVE", "FINISHED", "FAILED", "CANCELED")
TERMINAL = frozenset({"FINISHED", "FAILED", "CANCELED"})
UNSUCCESSFUL = frozenset({"FAILED", "CANCELED"})
COLUMNS = [
    "id",
    "job_id",
    "state",
    "source_se",
    "dest_se",
    "size",
    "done",
    "throughput",
    "attempts",
    "reason",
]
PLAIN_REPEAT_SECONDS = 30.0  # without a TTY, an unchanged progress line is repeated this often


def job_uuid(text: str) -> str:
    try:
        return str(uuid.UUID(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a job id (a UUID): {text!r}") from None


def register(nouns: Any) -> None:
    verbs = add_noun(nouns, "transfers", "File transfers (one row per file copy).")
    p = add_verb(
        verbs,
        "list",
        "List file transfers.",
        list_cmd,
        epilog="examples:\n  srcnet transfers list --state ACTIVE --state SUBMITTED\n"
        "  srcnet transfers list --job 6f1c...-... -o json",
    )
    p.add_argument(
        "--state", choices=FILE_STATES, action="append", help="only files in this state (repeatable)"
    )
    p.add_argument("--job", type=job_uuid, metavar="JOB_ID", help="only the files of this job")
    p.add_argument("--source-se", metavar="SE", help="e.g. root://host:1094")
    p.add_argument("--dest-se", metavar="SE")
    add_limit(p)
    p = add_verb(
        verbs,
        "watch",
        "Follow transfers until every selected file has ended.",
        watch_cmd,
        epilog="Without --job, watches the jobs that are SUBMITTED or ACTIVE when it starts.\n"
        "Progress goes to stderr (one line updated in place on a terminal); the final\n"
        "table/JSON to stdout. Exit 0 if all FINISHED, 7 if any FAILED/CANCELED, 8 on timeout.\n\n"
        "example:\n  srcnet transfers watch --job 6f1c...-... --timeout 3600",
    )
    p.add_argument("--job", type=job_uuid, metavar="JOB_ID", help="watch this job's files")
    p.add_argument("--timeout", type=positive_float, metavar="SEC", help="give up after SEC seconds (exit 8)")
    p.add_argument(
        "--interval",
        type=positive_float,
        default=2.0,
        metavar="SEC",
        help="seconds between polls (default 2)",
    )


def _row(f: Row) -> Row:
    reason = str(f.get("reason") or "")
    return {
        **f,
        "size": human_bytes(f.get("filesize")),
        "done": human_bytes(f.get("transferred_bytes")),
        "throughput": human_rate(f.get("throughput_bps")),
        "reason": reason if len(reason) <= 60 else reason[:57] + "...",
    }


def list_cmd(ctx: Context, args: argparse.Namespace) -> int:
    params = {"state": args.state, "job": args.job, "source_se": args.source_se, "dest_se": args.dest_se}
    rows, count = ctx.client.paginate(
        "/api/transfers/files/", {k: v for k, v in params.items() if v}, limit=args.limit
    )
    ctx.emit_list(rows, COLUMNS, _row, count=count, what="files")
    return ExitCode.OK


class Progress:
    """The live progress line on stderr: in place on a TTY, plain lines (on change) otherwise."""

    def __init__(self, stream: TextIO, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream
        isatty = getattr(stream, "isatty", None)
        self.tty = bool(isatty and isatty())
        self.clock = clock
        self.started = clock()
        self.first_done: int | None = None
        self.last_line = ""
        self.last_printed = 0.0
        self.open = False

    def update(self, files: Sequence[Row]) -> None:
        states = Counter(str(f.get("state")) for f in files)
        done = sum(_done_bytes(f) for f in files)
        total = sum(int(f.get("filesize") or f.get("transferred_bytes") or 0) for f in files)
        now = self.clock()
        elapsed = now - self.started
        if self.first_done is None:
            self.first_done = done
        rate = (done - self.first_done) / elapsed / 1e6 if elapsed > 0 else 0.0
        counts = "  ".join(f"{s} {states[s]}" for s in FILE_STATES if states.get(s))
        percent = f" ({100 * done / total:.0f}%)" if total else ""
        line = (
            f"{counts or 'no files'} | {human_bytes(done)} / {human_bytes(total)}{percent}"
            f" | {rate:.1f} MB/s | {elapsed:.0f} s"
        )
        if self.tty:
            self.stream.write(f"\r{line}\x1b[K")
            self.open = True
        else:
            key = line.rsplit(" | ", 1)[0]  # ignore the clock when deciding whether anything changed
            if key != self.last_line or now - self.last_printed >= PLAIN_REPEAT_SECONDS:
                self.stream.write(f"srcnet: {line}\n")
                self.last_line, self.last_printed = key, now
        self.stream.flush()

    def finish(self) -> None:
        if self.open:
            self.stream.write("\n")
            self.stream.flush()
            self.open = False


def _done_bytes(f: Row) -> int:
    moved = int(f.get("transferred_bytes") or 0)
    if f.get("state") == "FINISHED":
        return max(moved, int(f.get("filesize") or 0))
    return moved


def _fetch(ctx: Context, jobs: Sequence[str]) -> list[Row]:
    files: list[Row] = []
    for job in jobs:
        rows, _ = ctx.client.paginate("/api/transfers/files/", {"job": job})
        files.extend(rows)
    return files


def watch_cmd(ctx: Context, args: argparse.Namespace) -> int:
    if args.job:
        ctx.client.get(f"/api/transfers/jobs/{args.job}/")  # an unknown job: NotFound (exit 4)
        jobs = [args.job]
    else:
        active, _ = ctx.client.paginate("/api/transfers/jobs/", {"state": ["SUBMITTED", "ACTIVE"]})
        jobs = [str(j["job_id"]) for j in active]
        if not jobs:
            ctx.info("srcnet: no SUBMITTED or ACTIVE transfer jobs to watch")
            ctx.emit_list([], COLUMNS, _row)
            return ExitCode.OK
        ctx.info(f"srcnet: watching {len(jobs)} job(s)")
    deadline = None if args.timeout is None else time.monotonic() + args.timeout
    progress = Progress(ctx.stderr)
    timed_out = False
    try:
        while True:
            files = _fetch(ctx, jobs)
            progress.update(files)
            if all(f.get("state") in TERMINAL for f in files):
                break
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                timed_out = True
                break
            time.sleep(args.interval if deadline is None else max(0.0, min(args.interval, deadline - now)))
    finally:
        progress.finish()
    ctx.emit_list(files, COLUMNS, _row)
    if timed_out:
        pending = sum(1 for f in files if f.get("state") not in TERMINAL)
        ctx.info(
            f"srcnet: timed out after {args.timeout:g} s: {pending} of {len(files)} file(s) not finished"
        )
        return ExitCode.TIMEOUT
    bad = [f for f in files if f.get("state") in UNSUCCESSFUL]
    if bad:
        ctx.info(f"srcnet: {len(bad)} of {len(files)} file(s) failed or were canceled")
        return ExitCode.TRANSFER_FAILED
    ctx.info(f"srcnet: all {len(files)} file(s) finished")
    return ExitCode.OK
