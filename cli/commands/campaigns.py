"""``srcnet campaigns run|list|show|stop|resume|delete|report`` (or ``srcnet campaign ...``): data-challenge
campaigns from the shell."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from ..context import Context, Row, add_limit, add_noun, add_verb, positive_float, positive_int
from ..errors import TransferFailed, UsageError, WatchTimeout
from ..exit_codes import ExitCode
from ..output import human_bytes, human_rate

# File sizes are binary (4M = 4 MiB, like the files on disk); rates are decimal bit/s (200M = 200 Mbit/s).
SIZE_UNITS = {"k": 1024.0, "m": 1024.0**2, "g": 1024.0**3, "t": 1024.0**4}
RATE_UNITS = {"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15}
TIME_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
LIST_COLUMNS = [
    "id",
    "name",
    "mode",
    "state",
    "sources",
    "destinations",
    "target",
    "duration_s",
    "schedule",
    "created",
]
SCORE_KEYS = [
    "state",
    "schedule",
    "runs",
    "target",
    "achieved",
    "planned_bytes",
    "achieved_bytes",
    "products",
    "complete",
    "rerouted",
    "failed",
    "success_rate",
    "error",
]


def _with_unit(text: str, units: dict[str, float], what: str) -> float:
    text = text.strip().lower().removesuffix("bit/s").removesuffix("b").removesuffix("i")
    try:
        value = float(text[:-1]) * units[text[-1]] if text and text[-1] in units else float(text)
    except (ValueError, IndexError) as exc:
        raise argparse.ArgumentTypeError(f"not a {what}: {text!r}") from exc
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{what} must be positive")
    return value


def rate(text: str) -> float:
    return _with_unit(text, RATE_UNITS, "rate")


def every(text: str) -> int:
    """``90``, ``30s``, ``10m``, ``1h``, ``1d``: whole seconds (the server checks the bounds)."""
    text = text.strip().lower()
    try:
        value = float(text[:-1]) * TIME_UNITS[text[-1]] if text and text[-1] in TIME_UNITS else float(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a time: {text!r} (e.g. 90, 30s, 10m, 1h, 1d)") from exc
    if value <= 0 or value != int(value):
        raise argparse.ArgumentTypeError(f"not a whole positive number of seconds: {text!r}")
    return int(value)


def schedule(c: Row) -> str:
    if c.get("every_seconds") is not None:
        return f"every {c['every_seconds']} s"
    if c.get("cron"):
        return f"cron {c['cron']}"
    return f"run of {c['template']}" if c.get("template") else "once"


def size_range(text: str) -> tuple[int, int]:
    low, _, high = text.partition(":")
    return int(_with_unit(low, SIZE_UNITS, "size")), int(_with_unit(high or low, SIZE_UNITS, "size"))


def register(nouns: Any) -> None:
    # "campaign" too: the issue and people say "srcnet campaign run ..."; the other nouns are plural.
    verbs = add_noun(
        nouns,
        "campaigns",
        "Data-challenge campaigns: synthetic products at a target rate, scored.",
        aliases=["campaign"],
    )
    p = add_verb(
        verbs,
        "run",
        "Create and start a campaign, show its progress on stderr until it ends, print its score.",
        run,
        epilog="examples:\n"
        "  srcnet campaigns run --source SKA1-Low --destination UKSRC_DISK --rate 200M --duration 30 "
        "--file-size 4M:16M\n"
        "  srcnet campaigns run --mode simulated --source SKA1-Low --destination UKSRC_DISK "
        "--rate 100G --duration 86400 --file-size 10G:90G --topology reference\n"
        "  srcnet campaigns run --source SKA1-Low --destination UKSRC_DISK --rate 200M --duration 60 "
        "--every 1h",
    )
    p.add_argument("--name", default="", help="default: made from the sources and destinations")
    p.add_argument("--source", action="append", required=True, help="telescope or SDP endpoint (repeatable)")
    p.add_argument("--destination", action="append", required=True, help="SRC storage endpoint (repeatable)")
    p.add_argument("--rate", type=rate, required=True, help="target rate in bit/s: 200M, 10G, 1.2e9")
    p.add_argument("--ramp", type=float, default=0.0, help="seconds to reach the target rate (default 0)")
    p.add_argument("--duration", type=positive_float, required=True, help="seconds")
    p.add_argument(
        "--file-size", type=size_range, default=(4 * 1024**2, 16 * 1024**2), help="MIN:MAX, e.g. 4M:16M"
    )
    p.add_argument("--files-per-product", type=positive_int, default=1)
    p.add_argument("--mode", choices=["real", "simulated"], default="real")
    p.add_argument("--topology", choices=["db", "reference"], default="db", help="simulated mode only")
    p.add_argument("--scenario", default="one_replica", help="simulated mode only")
    p.add_argument("--start-at", default=None, help="ISO 8601 time to start (default: now)")
    p.add_argument("--cleanup", action="store_true", help="delete the synthetic data afterwards")
    recurring = p.add_mutually_exclusive_group()
    recurring.add_argument(
        "--every",
        type=every,
        default=None,
        help="recurring: a new run every 90, 30s, 10m, 1h, 1d (the first at the start)",
    )
    recurring.add_argument(
        "--cron", default=None, help='recurring: a new run at these UTC times, e.g. "0 * * * *"'
    )
    p.add_argument("--no-wait", action="store_true", help="create and return at once")
    p.add_argument("--timeout", type=positive_float, default=7 * 86400.0, help="seconds to wait")
    p.add_argument("--interval", type=positive_float, default=2.0, help="seconds between polls")
    p = add_verb(verbs, "list", "Campaigns, newest first.", list_campaigns)
    add_limit(p)
    for name, fn, text in (
        ("show", show, "One campaign and its score (a recurring one: its schedule and runs)."),
        ("stop", stop, "Stop generating (what was pushed keeps moving); a recurring one: disable it."),
        ("resume", resume, "Resume a stopped campaign; a recurring one: enable it again."),
        ("delete", delete, "Delete a recurring campaign and its schedule (its runs stay)."),
    ):
        p = add_verb(verbs, name, text, fn)
        p.add_argument("id", type=int)
    p = add_verb(verbs, "report", "Download a finished campaign's report (CSV, PNG plots, JSON).", report)
    p.add_argument("id", type=int)
    p.add_argument("--out", type=Path, required=True)


def _score(c: Row) -> Row:
    s = c.get("summary") or {}
    return {
        **s,
        "state": c["state"],
        "schedule": schedule(c),
        "runs": ",".join(str(r) for r in c.get("runs") or []),
        "target": human_rate(c.get("target_rate_bps")),
        "achieved": human_rate(s.get("achieved_rate_bps")),
        "planned_bytes": human_bytes(s.get("planned_bytes")),
        "achieved_bytes": human_bytes(s.get("achieved_bytes")),
        "error": c.get("error") or "",
    }


def _row(c: Row) -> Row:
    return {
        **c,
        "sources": ",".join(c["sources"]),
        "destinations": ",".join(c["destinations"]),
        "target": human_rate(c["target_rate_bps"]),
        "duration_s": c["duration_seconds"],
        "schedule": schedule(c),
    }


def _emit(ctx: Context, campaign: Row) -> None:
    if ctx.as_json:
        ctx.emit_object(campaign, list(campaign))
    else:
        ctx.emit_object(_score(campaign), SCORE_KEYS)


def _progress(ctx: Context, campaign: Row) -> None:
    samples = ctx.client.get(f"/api/campaigns/{campaign['id']}/samples/")
    if samples:
        last = samples[-1]
        ctx.info(
            f"srcnet: campaign {campaign['id']} {campaign['state']} {last['wall_seconds']:.0f} s: "
            f"achieved {human_rate(last['achieved_rate_bps'])} "
            f"vs target {human_rate(last['target_rate_bps'])}, "
            f"{human_bytes(last['achieved_bytes'])} of {human_bytes(last['planned_bytes'])} planned, "
            f"{last['complete']}/{last['products']} products"
        )
    else:
        ctx.info(f"srcnet: campaign {campaign['id']} {campaign['state']}")


def run(ctx: Context, args: argparse.Namespace) -> int:
    low, high = args.file_size
    body = {
        "name": args.name or f"{'+'.join(args.source)}->{'+'.join(args.destination)}",
        "mode": args.mode,
        "sources": args.source,
        "destinations": args.destination,
        "target_rate_bps": args.rate,
        "ramp_seconds": args.ramp,
        "duration_seconds": args.duration,
        "min_file_bytes": low,
        "max_file_bytes": high,
        "files_per_product": args.files_per_product,
        "topology": args.topology,
        "scenario": args.scenario,
        "start_at": args.start_at,
        "cleanup": args.cleanup,
    }
    if args.every is not None:
        body["every_seconds"] = args.every
    if args.cron is not None:
        body["cron"] = args.cron
    campaign = ctx.client.post("/api/campaigns/", body)
    ctx.info(f"srcnet: campaign {campaign['id']} created ({campaign['mode']}, {campaign['state']})")
    if campaign["state"] == "recurring":
        # A template never ends: its runs are campaigns of their own (srcnet campaigns list / show ID).
        ctx.info(f"srcnet: campaign {campaign['id']} starts a new run {schedule(campaign)}")
        _emit(ctx, campaign)
        return ExitCode.OK
    if args.no_wait:
        _emit(ctx, campaign)
        return ExitCode.OK
    started = time.monotonic()
    while campaign["state"] in ("scheduled", "running"):
        if time.monotonic() - started > args.timeout:
            raise WatchTimeout(
                f"campaign {campaign['id']} still {campaign['state']} after {args.timeout:g} s"
            )
        time.sleep(args.interval)
        campaign = ctx.client.get(f"/api/campaigns/{campaign['id']}/")
        _progress(ctx, campaign)
    _emit(ctx, campaign)
    if campaign["state"] == "failed":
        raise TransferFailed(f"campaign {campaign['id']} failed: {campaign['error']}")
    return ExitCode.OK


def list_campaigns(ctx: Context, args: argparse.Namespace) -> int:
    rows, count = ctx.client.paginate("/api/campaigns/", limit=args.limit)
    ctx.emit_list(rows, LIST_COLUMNS, _row, count=count, what="campaigns")
    return ExitCode.OK


def show(ctx: Context, args: argparse.Namespace) -> int:
    _emit(ctx, ctx.client.get(f"/api/campaigns/{args.id}/"))
    return ExitCode.OK


def stop(ctx: Context, args: argparse.Namespace) -> int:
    _emit(ctx, ctx.client.post(f"/api/campaigns/{args.id}/stop/", {}))
    return ExitCode.OK


def resume(ctx: Context, args: argparse.Namespace) -> int:
    _emit(ctx, ctx.client.post(f"/api/campaigns/{args.id}/resume/", {}))
    return ExitCode.OK


def delete(ctx: Context, args: argparse.Namespace) -> int:
    ctx.client.request("DELETE", f"/api/campaigns/{args.id}/")
    ctx.info(f"srcnet: campaign {args.id} deleted (its runs stay)")
    return ExitCode.OK


def report(ctx: Context, args: argparse.Namespace) -> int:
    campaign = ctx.client.get(f"/api/campaigns/{args.id}/")
    if not campaign["report_files"]:
        raise UsageError(f"campaign {args.id} is {campaign['state']}: its report is written when it ends")
    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out: cannot create {args.out}: {exc.strerror}") from exc
    for name in campaign["report_files"]:
        response = ctx.client.request(
            "GET", f"/api/campaigns/{args.id}/files/{name}/", headers={"Accept": "*/*"}
        )
        (args.out / name).write_bytes(response.content)
    ctx.info(f"srcnet: report written to {args.out}/ ({', '.join(campaign['report_files'])})")
    return ExitCode.OK
