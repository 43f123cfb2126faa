"""A campaign's report files: the time series as CSV, PNG plots, and its summary as JSON."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from django.conf import settings

from .models import Campaign


def report_dir(campaign_id: int) -> Path:
    """Where a campaign's report (samples, figures, the simulator's summary) is written."""
    return Path(settings.SRCNET_REPORTS_DIR) / "campaigns" / str(campaign_id)


CSV_COLUMNS = [
    "elapsed_seconds",
    "wall_seconds",
    "target_rate_bps",
    "achieved_rate_bps",
    "planned_bytes",
    "achieved_bytes",
    "products",
    "complete",
    "failed",
]


def report_files(campaign: Campaign) -> list[str]:
    out = report_dir(campaign.pk)
    return sorted(p.name for p in out.iterdir() if p.is_file()) if out.is_dir() else []


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # no display on a worker
    import matplotlib.pyplot as plt

    return plt


def _write_samples(c: Campaign, out: Path, *, time_label: str) -> list[Path]:
    """samples.csv (the time series, achieved bytes per destination), rate.png (achieved vs target rate)
    and destinations.png (achieved vs planned per destination) from the campaign's samples."""
    samples = list(c.samples.all())
    destinations = list(dict.fromkeys(c.destinations))
    with open(out / "samples.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(CSV_COLUMNS + [f"{d}_achieved_bytes" for d in destinations])
        for s in samples:
            row = [getattr(s, col) for col in CSV_COLUMNS]
            row += [s.per_destination.get(d, {}).get("achieved", 0) for d in destinations]
            writer.writerow(row)
    plt = _plt()
    wall = [s.wall_seconds for s in samples]
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.plot(wall, [s.target_rate_bps / 1e6 for s in samples], label="target", linestyle="--")
    ax.plot(wall, [s.achieved_rate_bps / 1e6 for s in samples], label="achieved")
    ax.set_xlabel(time_label)
    ax.set_ylabel("Mbit/s")
    ax.set_title(f"{c.name}: achieved vs target rate")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "rate.png")
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(8, 4))
    for d in destinations:
        ax.plot(wall, [s.per_destination.get(d, {}).get("achieved", 0) / 1e6 for s in samples], label=f"{d}")
        ax.plot(
            wall,
            [s.per_destination.get(d, {}).get("planned", 0) / 1e6 for s in samples],
            linestyle="--",
            label=f"{d} planned",
        )
    ax.set_xlabel(time_label)
    ax.set_ylabel("MB delivered")
    ax.set_title(f"{c.name}: per destination")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "destinations.png")
    plt.close(fig)
    return [out / n for n in ("samples.csv", "rate.png", "destinations.png")]


def write_real_report(c: Campaign) -> list[Path]:
    out = report_dir(c.pk)
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(c.summary, indent=2, default=str))
    return [out / "summary.json", *_write_samples(c, out, time_label="seconds since start")]


def write_simulated_report(c: Campaign) -> list[Path]:
    """The simulator wrote report.md, summary.json and its plots; add the campaign's own score and its
    time series (in simulated seconds)."""
    out = report_dir(c.pk)
    out.mkdir(parents=True, exist_ok=True)
    (out / "campaign.json").write_text(
        json.dumps({k: v for k, v in c.summary.items() if k != "simulator"}, indent=2, default=str)
    )
    return [out / "campaign.json", *_write_samples(c, out, time_label="simulated seconds since start")]
