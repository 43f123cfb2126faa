"""Run scenarios and write the report: a Markdown table per question, PNG plots, and JSON (pure)."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..planning.types import Product, Topology
from .engine import CapacityChange, SimConfig, SimResult, simulate
from .lpbound import lp_upper_bound
from .metrics import Summary, summarise
from .scenarios import CENTRE_EUR_PER_YEAR, Scenario

NEEDED = 1e15 * 8 / 86400 / 100e9  # the access-link utilisation 1 PB/day needs on 100 Gbit/s: 92.6 %


@dataclass(frozen=True)
class ScenarioRun:
    summary: Summary
    wall_s: float
    lp_bytes: dict[str, float]
    lp_complete_bytes: dict[str, float]
    sent_bytes: dict[str, float]
    # The run itself (every product's record, the access link's bytes per bin): not in summary.json.
    result: SimResult | None = field(default=None, compare=False, repr=False)


def run_scenario(
    scenario: Scenario,
    topology: Topology,
    products: Sequence[Product],
    *,
    duration_s: float,
    changes: Sequence[CapacityChange] = (),
    with_lp: bool = True,
    bin_s: float = 300.0,
    model: Mapping[str, float | bool] | None = None,
) -> ScenarioRun:
    """Simulate one scenario and, if asked, solve its LP bound over the same run; ``model``: SimConfig's
    options for how the stack moves a leg (measured.measured_stack), the defaults when None."""
    config = SimConfig(
        duration_s=duration_s,
        plan=scenario.plan,
        changes=tuple(changes),
        bin_s=bin_s,
        **dict(model or {}),  # type: ignore[arg-type]
    )
    started = time.perf_counter()
    result = simulate(topology, scenario.policy, products, config)
    wall = time.perf_counter() - started
    summary = summarise(scenario.name, result, CENTRE_EUR_PER_YEAR)
    sent = {tel: sum(bins) for tel, bins in result.access_bytes.items()}
    lp: dict[str, float] = {}
    lp_complete: dict[str, float] = {}
    if with_lp:
        lp = lp_upper_bound(topology, scenario.policy, products, duration_s=duration_s, changes=changes)
        lp_complete = lp_upper_bound(
            topology, scenario.policy, products, duration_s=duration_s, changes=changes, complete_copies=True
        )
    return ScenarioRun(summary, wall, lp, lp_complete, sent, result)


def _pct(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{100 * x:.2f} %"


def markdown(runs: Sequence[ScenarioRun], duration_s: float) -> str:
    """The report's tables."""
    lines = [
        f"# Simulation report ({duration_s / 3600:g} h simulated)",
        "",
        f"Access-link utilisation that 1 PB/day needs on 100 Gbit/s: {_pct(NEEDED)}.",
        "",
        "## Scenarios side by side",
        "",
        "| scenario | telescope | access utilisation | LP bound | planner / LP | LP bound, copies complete "
        "| SDP peak | products out of SDP | all replicas delivered | deadline misses "
        "| latency p50 / p90 / p99 (h) | link OPEX EUR/day | centres EUR/day | carried cost EUR "
        "| wall s | sim s per wall s |",
        "|" + "---|" * 16,
    ]
    for run in runs:
        s = run.summary
        for tel in sorted(s.access_utilisation):
            cap = s.access_utilisation[tel]
            lp = run.lp_bytes.get(tel)
            ratio = run.sent_bytes[tel] / lp if lp else math.nan
            lp_util = cap * lp / run.sent_bytes[tel] if lp and run.sent_bytes[tel] else math.nan
            lpc = run.lp_complete_bytes.get(tel)
            lpc_util = (
                cap * lpc / run.sent_bytes[tel] if lpc is not None and run.sent_bytes[tel] else math.nan
            )
            lat = s.latency_hours
            lines.append(
                f"| {s.name} | {tel} | {_pct(cap)} | {_pct(lp_util)} | {ratio:.4f} | {_pct(lpc_util)} "
                f"| {_pct(s.sdp_peak_fraction[tel])} | {s.left_sdp}/{s.products} "
                f"| {s.completed}/{s.products} "
                f"| {s.deadline_misses} | {lat['p50']:.2f} / {lat['p90']:.2f} / {lat['p99']:.2f} "
                f"| {s.link_opex_eur_per_day:,.0f} | {s.centre_eur_per_day:,.0f} | {s.carried_cost_eur:,.0f} "
                f"| {run.wall_s:.1f} | {duration_s / run.wall_s:,.0f} |"
            )
    lines += ["", "## Delivered volume per SRC against its share", ""]
    lines.append("| scenario | " + " | ".join(sorted(runs[0].summary.share)) + " |")
    lines.append("|" + "---|" * (len(runs[0].summary.share) + 1))
    lines.append(
        "| share | " + " | ".join(f"{v:.3f}" for _, v in sorted(runs[0].summary.share.items())) + " |"
    )
    for run in runs:
        s = run.summary
        row = [
            f"{s.primary_fraction.get(k, 0.0):.3f} ({s.delivered_bytes.get(k, 0.0) / 1e12:.0f} TB)"
            for k in sorted(s.share)
        ]
        lines.append(f"| {s.name} | " + " | ".join(row) + " |")
    lines += ["", "Fraction: of the primary replicas' bytes; TB: every replica delivered there.", ""]
    return "\n".join(lines)


def write_report(runs: Sequence[ScenarioRun], duration_s: float, out: Path) -> list[Path]:
    """Write report.md, summary.json and the PNG plots into ``out``; return the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    written = [out / "report.md", out / "summary.json"]
    written[0].write_text(markdown(runs, duration_s))
    written[1].write_text(
        json.dumps(
            [
                {
                    **asdict(r.summary),
                    "wall_s": r.wall_s,
                    "lp_bytes": r.lp_bytes,
                    "lp_complete_bytes": r.lp_complete_bytes,
                    "sent_bytes": r.sent_bytes,
                }
                for r in runs
            ],
            indent=1,
            default=str,
        )
    )
    bin_h = duration_s / 3600 / max(1, len(next(iter(runs[0].summary.utilisation_series.values()))))
    for key, ylabel, scale, name in (
        ("utilisation_series", "access-link utilisation (%)", 100.0, "utilisation.png"),
        ("sdp_series", "SDP buffer occupancy (TB)", 1e-12, "sdp_buffer.png"),
    ):
        fig, axes = plt.subplots(1, 2, figsize=(12, 4), sharey=True)
        for ax, tel in zip(axes, sorted(runs[0].summary.access_utilisation), strict=False):
            for run in runs:
                ys = [v * scale for v in getattr(run.summary, key)[tel]]
                ax.plot([(i + 1) * bin_h for i in range(len(ys))], ys, label=run.summary.name, lw=1)
            if key == "utilisation_series":
                ax.axhline(100 * NEEDED, color="k", ls="--", lw=0.8, label="1 PB/day")
            ax.set_title(tel)
            ax.set_xlabel("hours")
            ax.set_ylabel(ylabel)
        axes[0].legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out / name, dpi=100)
        plt.close(fig)
        written.append(out / name)
    fig, ax = plt.subplots(figsize=(12, 4))
    sites = sorted(runs[0].summary.share)
    width = 0.8 / (len(runs) + 1)
    ax.bar(
        [i for i in range(len(sites))],
        [runs[0].summary.share[s] for s in sites],
        width,
        label="share",
        color="k",
    )
    for j, run in enumerate(runs, start=1):
        ax.bar(
            [i + j * width for i in range(len(sites))],
            [run.summary.primary_fraction.get(s, 0) for s in sites],
            width,
            label=run.summary.name,
        )
    ax.set_xticks([i + 0.4 for i in range(len(sites))], sites, rotation=45, fontsize=8)
    ax.set_ylabel("fraction of primary bytes")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "shares.png", dpi=100)
    plt.close(fig)
    written.append(out / "shares.png")
    return written
