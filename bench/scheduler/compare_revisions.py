"""The push loop's, the planner's and the simulator's figures on two revisions, in one session.

    .venv/bin/python bench/scheduler/compare_revisions.py --before REV [--after REV] [--rounds 2]
        [--queues 1000,10000] [--scenario one_replica] [--days 1] [--scale 1] [--out DIR]

A refactoring that must change nothing a user sees (issue 34, item 6) is judged here: each revision is
checked out in a git worktree of its own (this checkout's virtual environment runs both), and the rounds
alternate between them (before, after, before, after...) so that both meet the same machine:

- the simulator (``bench_simulation.py --scenario S``): its figures (plans, events, access-link utilisation,
  deadline misses, products completed) must be **equal**; its speed is compared as a ratio;
- the planner (``bench_planner.py --repeat 1``): seconds per case, compared as ratios;
- the push cycle (``push_cycle.py``, this checkout's copy run in each worktree): each queue size's median
  cycle as a ratio to its own baseline SELECT, and what the cycles planned and submitted (equal).

Written: ``result.json`` (every round's figures) and ``result.md`` (after/before ratios with their spread
over the rounds) under ``--out`` (default ``bench/scheduler/results/compare-<before>-<after>/``).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".venv" / "bin" / "python"
SIM_LINE = re.compile(
    r"wall (?P<wall>[\d.]+) s .* plans (?P<plans>\d+) \| events (?P<events>\d+) .*\| (?P<util>[^|]*%) \| "
    r"misses (?P<misses>\d+) \| all replicas (?P<done>\d+/\d+)"
)


def _run(argv: list[str], cwd: Path, timeout: float) -> str:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} in {cwd} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout


def simulation(tree: Path, scenario: str, days: float) -> dict[str, Any]:
    argv = [str(PYTHON), "bench/scheduler/bench_simulation.py", "--scenario", scenario, "--days", str(days)]
    out = _run(argv, tree, 1800)
    match = SIM_LINE.search(out)
    if match is None:
        raise RuntimeError(f"no result line in the simulation's output:\n{out[-2000:]}")
    figures = match.groupdict()
    return {"wall_s": float(figures.pop("wall")), "figures": figures}


def planner(tree: Path, scale: float) -> dict[str, float]:
    argv = [str(PYTHON), "bench/scheduler/bench_planner.py", "--repeat", "1"]
    if scale != 1.0:  # (a revision's script from before --scale runs its full sizes)
        argv += ["--scale", str(scale)]
    out = _run(argv, tree, 1800)
    cases = {}
    for line in out.splitlines()[1:]:
        cells = [c.strip() for c in line.split("|")]
        if len(cells) == 7:
            named = re.search(r"\((\w+)\)", cells[6])
            cases[" ".join(cells[:5]) + (f" ({named.group(1)})" if named else "")] = float(cells[5])
    if not cases:
        raise RuntimeError(f"no case in the planner's output:\n{out[-2000:]}")
    return cases


def push_cycles(tree: Path, queues: str, out: Path) -> dict[str, Any]:
    # This checkout's script and its harness (a revision from before them has neither).
    script = tree / "bench" / "scheduler" / "push_cycle_compared.py"
    shutil.copy(ROOT / "bench" / "scheduler" / "push_cycle.py", script)
    shutil.copy(ROOT / "bench" / "own_state.py", tree / "bench" / "own_state.py")
    _run([str(PYTHON), str(script), "--queues", queues, "--out", str(out)], tree, 3600)
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def worktree(label: str, rev: str, parent: Path) -> Path:
    path = parent / f"{label}-{rev}"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(path), rev], check=True)
    return path


def summarise(rounds: list[dict[str, Any]], revs: dict[str, str]) -> str:
    before, after = "before", "after"

    def ratios(pick: Any) -> str:
        pairs = [pick(r[after]) / pick(r[before]) for r in rounds if pick(r[before])]
        if not pairs:
            return "n/a"
        spread = f" (rounds {', '.join(f'{p:.2f}' for p in pairs)})" if len(pairs) > 1 else ""
        return f"{statistics.median(pairs):.2f}{spread}"

    first = rounds[0]
    lines = [
        f"# {revs[after]} against {revs[before]}: after/before, median over {len(rounds)} rounds",
        "",
        "| what | after / before |",
        "| --- | --- |",
        f"| simulation wall time | {ratios(lambda r: r['simulation']['wall_s'])} |",
    ]
    for case in first[before]["planner"]:
        lines.append(f"| planner: {case} | {ratios(lambda r, c=case: r['planner'][c])} |")
    for index, queue in enumerate(first[before]["push_cycle"]["queues"]):
        q = queue["queue"]
        lines.append(
            f"| push cycle, {q} queued (cycle / its baseline SELECT) | "
            f"{ratios(lambda r, i=index: r['push_cycle']['queues'][i]['cycle_to_baseline'])} |"
        )
    same_sim = all(r[before]["simulation"]["figures"] == r[after]["simulation"]["figures"] for r in rounds)
    plans = [
        [
            (c["queued"], c["legs_planned"], c["legs_submitted"])
            for q in r[rev]["push_cycle"]["queues"]
            for c in q["cycles"]
        ]
        for r in rounds
        for rev in (before, after)
    ]
    same_plans = all(p == plans[0] for p in plans)
    lines += [
        "",
        f"Simulated figures equal in every round: **{same_sim}** ({first[after]['simulation']['figures']}).",
        f"Push cycles planned and submitted the same in every round: **{same_plans}**.",
    ]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--before", required=True, help="the revision before the change")
    parser.add_argument("--after", default="HEAD", help="the revision after it (default HEAD)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--queues", default="1000,10000")
    parser.add_argument("--scenario", default="one_replica")
    parser.add_argument("--days", type=float, default=1.0, help="the simulated days")
    parser.add_argument("--scale", type=float, default=1.0, help="the planner cases' products times this")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    revs = {}
    for label, name in (("before", args.before), ("after", args.after)):
        sha = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", name], capture_output=True, text=True
        )
        if sha.returncode != 0:
            parser.error(f"not a revision here: {name}")
        revs[label] = sha.stdout.strip()
    out = args.out or ROOT / "bench" / "scheduler" / "results" / f"compare-{revs['before']}-{revs['after']}"
    out.mkdir(parents=True, exist_ok=True)
    parent = Path(tempfile.mkdtemp(prefix="srcnet-compare-"))
    # The worktrees' own local network (.state in each: its PostgreSQL runs as its service account, which
    # must reach it) goes when they go.
    parent.chmod(0o755)
    trees: dict[str, Path] = {}
    rounds: list[dict[str, Any]] = []
    try:
        for label, rev in revs.items():
            trees[label] = worktree(label, rev, parent)
        for number in range(args.rounds):
            one: dict[str, Any] = {}
            for label, tree in trees.items():
                one[label] = {
                    "simulation": simulation(tree, args.scenario, args.days),
                    "planner": planner(tree, args.scale),
                    "push_cycle": push_cycles(tree, args.queues, out / f"push_cycle-{label}-{number}.json"),
                }
                print(f"round {number + 1}, {label} ({revs[label]}): done", file=sys.stderr, flush=True)
            rounds.append(one)
    finally:
        for tree in trees.values():
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
        shutil.rmtree(parent, ignore_errors=True)
    (out / "result.json").write_text(json.dumps({"revisions": revs, "rounds": rounds}, indent=1))
    report = summarise(rounds, revs)
    (out / "result.md").write_text(report)
    print(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
