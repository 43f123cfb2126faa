"""``srcnet plan show|cycles`` and ``srcnet simulations run|list|show``: the push scheduler from the shell."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from ..context import Context, Row, add_limit, add_noun, add_verb, positive_float
from ..errors import TransferFailed, UsageError, WatchTimeout
from ..exit_codes import ExitCode
from ..output import human_rate

LEG_COLUMNS = [
    "product",
    "role",
    "source",
    "destination",
    "slot",
    "start_s",
    "streams",
    "files",
    "priority",
    "rate",
    "due_now",
]
CYCLE_COLUMNS = ["id", "created", "products_queued", "legs_planned", "legs_submitted", "error"]
SIM_COLUMNS = ["id", "scenario", "days", "state", "created", "finished"]
SUMMARY_COLUMNS = [
    "scenario",
    "utilisation",
    "deadline_misses",
    "latency_p99_h",
    "completed",
    "opex_eur_per_day",
]


def register(nouns: Any) -> None:
    verbs = add_noun(nouns, "plan", "The push scheduler's plan: what moves when, and why.")
    add_verb(
        verbs,
        "show",
        "Plan the products waiting at the SDPs now (nothing is submitted).",
        plan_show,
        epilog="example:\n  srcnet plan show -o json",
    )
    p = add_verb(verbs, "cycles", "The push loop's recent cycles: what each planned and submitted.", cycles)
    add_limit(p)
    verbs = add_noun(nouns, "simulations", "Flow-level simulations of the replica scenarios at full scale.")
    p = add_verb(
        verbs,
        "run",
        "Run a simulation on the server, wait for it, download its report.",
        run,
        epilog="examples:\n  srcnet simulations run --scenario all --days 1 --out report/\n"
        "  srcnet simulations run --scenario one_replica --days 0.5 --failures --out r/",
    )
    p.add_argument("--scenario", default="all", help="all, or one scenario (one_replica, two_replicas, ...)")
    p.add_argument("--days", type=positive_float, default=1.0)
    p.add_argument("--topology", choices=["db", "reference"], default="db")
    p.add_argument("--failures", action="store_true", help="inject the reference link-failure schedule")
    p.add_argument("--no-lp", action="store_true", help="skip the linear-program upper bound")
    p.add_argument("--out", type=Path, required=True, help="folder for report.md, summary.json and the plots")
    p.add_argument("--timeout", type=positive_float, default=3600.0, help="seconds to wait (default 3600)")
    p.add_argument("--interval", type=positive_float, default=2.0, help="seconds between polls")
    p = add_verb(verbs, "list", "Simulations asked for so far.", list_simulations)
    add_limit(p)
    p = add_verb(verbs, "show", "One simulation and its figures.", show_simulation)
    p.add_argument("id", type=int)


def _leg(leg: Row) -> Row:
    return {
        **leg,
        "slot": leg.get("start_slot"),
        "start_s": round(float(leg.get("start_s") or 0), 1),
        "rate": human_rate(leg.get("rate_bps")),
        "due_now": "yes" if leg.get("due_now") else "",
    }


def plan_show(ctx: Context, args: argparse.Namespace) -> int:
    preview = ctx.client.get("/api/schedulers/plan/")
    if ctx.as_json:
        ctx.emit_object(preview, list(preview))
        return ExitCode.OK
    ctx.out(ctx_table(preview["legs"], LEG_COLUMNS, _leg))
    for event in preview.get("events", []):
        ctx.info(f"srcnet: {event['telescope']} {event['kind']}: {event['detail']}")
    ctx.info(f"srcnet: {preview['products_queued']} products waiting, {len(preview['legs'])} legs planned")
    return ExitCode.OK


def ctx_table(rows: list[Row], columns: list[str], to_row: Any) -> str:
    from ..output import render_table

    return render_table([to_row(r) for r in rows], columns)


def cycles(ctx: Context, args: argparse.Namespace) -> int:
    rows, count = ctx.client.paginate("/api/schedulers/cycles/", limit=args.limit)
    ctx.emit_list(rows, CYCLE_COLUMNS, count=count, what="cycles")
    return ExitCode.OK


def _summary_rows(summary: list[dict[str, Any]]) -> list[Row]:
    rows: list[Row] = []
    for entry in summary:
        utilisation = entry.get("access_utilisation") or {}
        latency = entry.get("latency_hours") or {}
        rows.append(
            {
                "scenario": entry.get("name"),
                "utilisation": ", ".join(f"{k} {100 * v:.1f}%" for k, v in sorted(utilisation.items())),
                "deadline_misses": entry.get("deadline_misses"),
                "latency_p99_h": latency.get("p99") if isinstance(latency, dict) else latency,
                "completed": entry.get("completed"),
                "opex_eur_per_day": round(float(entry.get("link_opex_eur_per_day") or 0), 0),
            }
        )
    return rows


def run(ctx: Context, args: argparse.Namespace) -> int:
    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out: cannot create {args.out}: {exc.strerror}") from exc
    simulation = ctx.client.post(
        "/api/schedulers/simulations/",
        {
            "scenario": args.scenario,
            "days": args.days,
            "topology": args.topology,
            "failures": args.failures,
            "with_lp": not args.no_lp,
        },
    )
    started = time.monotonic()
    while simulation["state"] in ("queued", "running"):
        elapsed = time.monotonic() - started
        if elapsed > args.timeout:
            raise WatchTimeout(
                f"simulation {simulation['id']} still {simulation['state']} after {args.timeout:g} s"
            )
        ctx.info(f"srcnet: simulation {simulation['id']} {simulation['state']} ({elapsed:.0f} s)")
        time.sleep(args.interval)
        simulation = ctx.client.get(f"/api/schedulers/simulations/{simulation['id']}/")
    if simulation["state"] != "done":
        raise TransferFailed(f"simulation {simulation['id']} failed: {simulation['error']}")
    for name in simulation["report_files"]:
        response = ctx.client.request(
            "GET", f"/api/schedulers/simulations/{simulation['id']}/files/{name}/", headers={"Accept": "*/*"}
        )
        (args.out / name).write_bytes(response.content)
    ctx.info(f"srcnet: report written to {args.out}/ ({', '.join(simulation['report_files'])})")
    if ctx.as_json:
        ctx.emit_object(simulation, list(simulation))
    else:
        ctx.out(ctx_table(_summary_rows(simulation["summary"]), SUMMARY_COLUMNS, lambda r: r))
    return ExitCode.OK


def list_simulations(ctx: Context, args: argparse.Namespace) -> int:
    rows, count = ctx.client.paginate("/api/schedulers/simulations/", limit=args.limit)
    ctx.emit_list(rows, SIM_COLUMNS, count=count, what="simulations")
    return ExitCode.OK


def show_simulation(ctx: Context, args: argparse.Namespace) -> int:
    simulation = ctx.client.get(f"/api/schedulers/simulations/{args.id}/")
    if ctx.as_json:
        ctx.emit_object(simulation, list(simulation))
    else:
        ctx.out(ctx_table(_summary_rows(simulation.get("summary") or []), SUMMARY_COLUMNS, lambda r: r))
        ctx.info(
            f"srcnet: simulation {args.id}: {simulation['state']} {simulation.get('error') or ''}".rstrip()
        )
    return ExitCode.OK
