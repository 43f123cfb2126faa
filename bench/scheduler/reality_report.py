"""The Markdown report of bench_reality.py: the real run and the simulator's models side by side."""

from __future__ import annotations

from typing import Any

SDP, UK, AU = "SKA1-LOW_SDP", "UKSRC_DISK", "AUSRC_DISK"
BIN_S = 10.0


def ratio(sim: float | None, real: float | None) -> float | None:
    return sim / real if sim is not None and real else None


def markdown(result: dict[str, Any]) -> str:
    real, sims = result["real"], result["simulated"]
    cols = ["real", *[s["label"] for s in sims]]
    runs = [real, *sims]

    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{100 * x:.1f} %"

    def sec(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.1f} s"

    def row(figure: str, cells: list[str]) -> str:
        return f"| {figure} | {' | '.join(cells)} |"

    lines = [row("figure", cols), f"|---|{'---|' * len(cols)}"]
    for name, what in (
        ("any", "some product undelivered"),
        ("both", "both SRCs' products undelivered"),
        ("one", "one SRC's products only"),
        ("queued", "some product queued at the SDP"),
    ):
        cells = [
            f"{pct(r['utilisation_while_waiting'].get(name))} ({r['waiting_seconds'].get(name, 0):.0f} s)"
            if name in r["utilisation_while_waiting"]
            else "n/a"
            for r in runs
        ]
        lines.append(row(f"access link busy while {what} (time)", cells))
    lines += [
        row("access link busy over the duration", [pct(r["utilisation_in_duration"]) for r in runs]),
        row("products complete / made", [f"{r['complete']} / {r['products']}" for r in runs]),
        row("completion p50", [sec(r["latency_s"]["p50"]) for r in runs]),
        row("completion p90", [sec(r["latency_s"]["p90"]) for r in runs]),
    ]
    for src in (UK, AU):
        for key, what in (("p50_s", "p50"), ("p90_s", "p90")):
            lines.append(
                row(f"completion {what} at {src}", [sec(r["per_src"].get(src, {}).get(key)) for r in runs])
            )
    for src in (UK, AU):
        for key, what in (("bytes_in_duration", "within the duration"), ("bytes_total", "in all")):
            values = [r["per_src"].get(src, {}).get(key, 0) / 1e6 for r in runs]
            lines.append(row(f"MB to {src} {what}", [f"{v:.0f}" for v in values]))
    real_dead = real.get("diagnosis", {}).get("copy_dead_s", {})
    for lane in real_dead:
        cells = [sec((r.get("diagnosis", r).get("copy_dead_s") or {}).get(lane, {}).get("p50")) for r in runs]
        lines.append(row(f"copy dead time p50, {lane}", cells))
    busy = real["utilisation_while_waiting"]["any"]
    lines.append(
        row(
            "simulated / real: busy while undelivered",
            ["1"] + [f"{ratio(s['utilisation_while_waiting']['any'], busy) or 0:.3f}" for s in sims],
        )
    )
    lines.append(
        row(
            "simulated / real: p50",
            ["1"] + [f"{ratio(s['latency_s']['p50'], real['latency_s']['p50']) or 0:.3f}" for s in sims],
        )
    )
    for src in (UK, AU):
        mine = real["per_src"].get(src, {}).get("p50_s")
        lines.append(
            row(
                f"simulated / real: p50 at {src}",
                ["1"] + [f"{ratio(s['per_src'].get(src, {}).get('p50_s'), mine) or 0:.3f}" for s in sims],
            )
        )
    runs_compared = result.get("real_runs") or []
    if len(runs_compared) > 1:
        n = len(runs_compared)
        mean_busy = sum(r["busy_while_waiting"] for r in runs_compared) / n
        mean_p50 = sum(r["p50_s"] for r in runs_compared) / n
        lines += [
            row(
                f"simulated / mean of {n} real runs ({pct(mean_busy)}): busy while undelivered",
                ["1"] + [f"{ratio(s['utilisation_while_waiting']['any'], mean_busy) or 0:.3f}" for s in sims],
            ),
            row(
                f"simulated / mean of {n} real runs ({sec(mean_p50)}): p50",
                ["1"] + [f"{ratio(s['latency_s']['p50'], mean_p50) or 0:.3f}" for s in sims],
            ),
        ]
    lines += seed_lines(result.get("simulator_seeds") or [], runs_compared)
    fitted = next((s for s in sims if "fit" in s), None)
    if fitted is not None:
        model = fitted["model"]
        dead = ", ".join(f"{a}->{b} {sec(x)}" for a, b, x in model.get("lane_extra_dead_s", ()))
        lines += [
            "",
            f"Fitted lanes (to the real job rates p50 "
            f"{', '.join(f'{k} {v / 1e6:.1f}' for k, v in fitted['fit']['job_rate_targets_bps'].items())} "
            f"Mbit/s; simulated "
            f"{', '.join(f'{k} {(v or 0) / 1e6:.1f}' for k, v in fitted['job_rate_bps'].items())}): RTT "
            f"fairness {model.get('rtt_fairness')}, extra dead time per copy {dead or 'none'}.",
        ]
    predicted = real.get("arrival_prediction")
    if predicted:
        lines += [
            "",
            f"The push loop's predicted arrival against the arrival ({predicted['products']} products, the "
            "prediction made as each product's first leg was submitted):",
            "",
            "| figure | p50 | p90 |",
            "|---|---|---|",
            f"| error, seconds | {sec(predicted['error_s']['p50'])} | {sec(predicted['error_s']['p90'])} |",
            f"| error / the product's wait | {pct(predicted['error_of_wait']['p50'])} | "
            f"{pct(predicted['error_of_wait']['p90'])} |",
            "",
            f"Mean signed error (arrival - prediction): {sec(predicted['error_s']['mean_signed'])}.",
        ]
        shown = predicted.get("shown_over_the_wait")
        if shown and shown.get("products"):
            lines.append(
                f"The arrival shown while each product waited (sampled each second, updated each cycle): "
                f"its error averaged over the wait, {pct(shown['p50'])} of the wait at p50, "
                f"{pct(shown['p90'])} at p90 ({shown['products']} products)."
            )
        for destination, d in (predicted.get("per_destination") or {}).items():
            lines.append(
                f"At {destination} ({d['products']} products): error p50 {sec(d['error_s_p50'])}, "
                f"{pct(d['error_of_wait_p50'])} of the wait; mean signed {sec(d['mean_signed_s'])}."
            )
    stages = real.get("diagnosis", {}).get("stages_s") or {}
    if stages:
        lines += [
            "",
            "Where a delivered product's wait went in the real run, per lane (p50 / mean, seconds):",
            "",
            "| lane | registered to submitted | submitted to started | started to copied | copied to "
            "AVAILABLE |",
            "|---|---|---|---|---|",
        ]
        for lane, by_stage in sorted(stages.items()):
            cells = [
                f"{sec(by_stage[name]['p50'])} / {sec(by_stage[name]['mean'])}"
                for name in (
                    "registered_to_submitted",
                    "submitted_to_started",
                    "started_to_copied",
                    "copied_to_available",
                )
            ]
            lines.append(row(lane, cells))
    lines += ["", f"Access-link utilisation per {BIN_S:g} s bin (from the campaign's start):", ""]
    lines += [row("t (s)", cols), f"|---|{'---|' * len(cols)}"]
    for i in range(max(len(r["utilisation_bins"]) for r in runs)):
        cells = [pct(r["utilisation_bins"][i]) if i < len(r["utilisation_bins"]) else "" for r in runs]
        if all(c in ("", "0.0 %") for c in cells):
            continue
        lines.append(row(f"{i * BIN_S:.0f}-{(i + 1) * BIN_S:.0f}", cells))
    return "\n".join(lines) + "\n"


def seed_lines(seeds: list[dict[str, Any]], real_runs: list[dict[str, Any]]) -> list[str]:
    """The simulator column's figures with each seed of its copies' draws, their mean, and the mean of
    the real runs compared (each run's own luck), side by side."""
    if not seeds:
        return []

    def figures(r: dict[str, Any]) -> list[float | None]:
        per_src = r.get("per_src_p50_s", {})
        return [r["busy_while_waiting"], r["p50_s"], per_src.get(UK), per_src.get(AU)]

    def mean(rows: list[list[float | None]], i: int) -> float | None:
        values = [x for x in (row[i] for row in rows) if x is not None]
        return sum(values) / len(values) if values else None

    def cells(values: list[float | None]) -> str:
        busy, *seconds = values
        shown = ["n/a" if busy is None else f"{100 * busy:.1f} %"]
        shown += ["n/a" if x is None else f"{x:.1f} s" for x in seconds]
        return " | ".join(shown)

    sim_rows = [figures(r) for r in seeds]
    real_rows = [figures(r) for r in real_runs]
    sim_mean = [mean(sim_rows, i) for i in range(4)]
    lines = [
        "",
        "The simulator column with each seed of its copies' draws (SimConfig.share_spread), and the real "
        "runs:",
        "",
        f"| run | busy while undelivered | completion p50 | p50 at {UK} | p50 at {AU} |",
        "|---|---|---|---|---|",
        *(f"| simulator, seed {r['seed']} | {cells(row)} |" for r, row in zip(seeds, sim_rows, strict=True)),
        f"| simulator, mean of {len(seeds)} seeds | {cells(sim_mean)} |",
        *(f"| real run {i + 1} | {cells(row)} |" for i, row in enumerate(real_rows)),
    ]
    if real_rows:
        real_mean = [mean(real_rows, i) for i in range(4)]
        ratios = [ratio(s, r) for s, r in zip(sim_mean, real_mean, strict=True)]
        lines += [
            f"| mean of {len(real_rows)} real runs | {cells(real_mean)} |",
            "| simulator mean / real mean | "
            + " | ".join("n/a" if x is None else f"{x:.3f}" for x in ratios)
            + " |",
        ]
    return lines
