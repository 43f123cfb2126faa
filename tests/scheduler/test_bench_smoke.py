"""The scheduler's benchmarks run with tiny sizes (their smoke runs in make test, so that none rots unseen):
the planner's and the simulator's scripts as a user runs them, the push cycle's in this test's database, and
the comparison of two revisions (here this one with itself, whose figures must then be equal)."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from localnet.state import PROJECT_ROOT

PYTHON = PROJECT_ROOT / ".venv" / "bin" / "python"
SCRIPTS = PROJECT_ROOT / "bench" / "scheduler"


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_planner_benchmark_times_every_case() -> None:
    out = subprocess.run(
        [str(PYTHON), str(SCRIPTS / "bench_planner.py"), "--repeat", "1", "--scale", "0.01"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    rows = [line.split("|") for line in out.splitlines()[1:]]
    assert len(rows) == 15, out
    assert all(int(row[1]) >= 100 and float(row[5]) >= 0 for row in rows), out


def test_the_simulation_benchmark_reports_a_days_figures() -> None:
    compare = _script("compare_revisions")
    result = compare.simulation(PROJECT_ROOT, "one_replica", 0.01)
    figures = result["figures"]
    done, products = (int(x) for x in figures["done"].split("/"))
    assert products > 0 and 0 < done <= products, figures
    assert int(figures["plans"]) > 0 and result["wall_s"] >= 0


@pytest.mark.django_db(transaction=True)
def test_the_push_cycle_benchmark_measures_cycles_against_its_baseline(
    reference_topology, idle_queue
) -> None:  # type: ignore[no-untyped-def]
    result = _script("push_cycle").measure([20, 40], 2)
    first, second = result["queues"]
    assert (first["queue"], second["queue"]) == (20, 40)
    assert first["cycles"][0]["queued"] == 20
    assert first["cycles"][0]["legs_submitted"] > 0  # the empty lanes took copies
    assert second["cycles"][0]["queued"] == 40  # topped up to the next size
    assert all(c["error"] == "" for q in result["queues"] for c in q["cycles"]), result
    assert all(q["cycle_to_baseline"] > 0 for q in result["queues"]), result
    assert idle_queue.waiting() > 0  # the cycles' tasks wait in the test's own queue, run by no worker


def test_two_revisions_compared_give_equal_figures_when_they_are_one(tmp_path: Path) -> None:
    run = subprocess.run(
        [
            str(PYTHON),
            str(SCRIPTS / "compare_revisions.py"),
            "--before",
            "HEAD",
            "--after",
            "HEAD",
            "--rounds",
            "1",
            "--queues",
            "10",
            "--days",
            "0.01",
            "--scale",
            "0.01",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    report = (tmp_path / "result.md").read_text()
    assert "Simulated figures equal in every round: **True**" in report, report
    assert "planned and submitted the same in every round: **True**" in report, report
    assert "| push cycle, 10 queued" in report and "| planner: reference" in report, report
