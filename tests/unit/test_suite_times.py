"""The guard on make test's time (scripts/suite_times.py and tests/budgets.toml): a suite whose share of the
tests' time grows past its budget fails the run, so does a new suite without a budget, a slow phase, or a
whole run past its wall-time budget."""

from __future__ import annotations

import importlib.util
import sys
import tomllib
from pathlib import Path

import pytest

from localnet.state import PROJECT_ROOT

SCRIPT = PROJECT_ROOT / "scripts" / "suite_times.py"
BUDGETS = PROJECT_ROOT / "tests" / "budgets.toml"


def _load():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("suite_times", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


suite_times = _load()


def _junit(path: Path, seconds: dict[str, list[float]]) -> Path:
    cases = "".join(
        f'<testcase classname="tests.{suite}.test_x" name="t{i}" time="{t}"/>'
        for suite, times in seconds.items()
        for i, t in enumerate(times)
    )
    path.write_text(
        f'<?xml version="1.0"?><testsuites><testsuite name="pytest">{cases}</testsuite></testsuites>'
    )
    return path


def _run(
    tmp_path: Path, budgets: str, phases: str, seconds: dict[str, list[float]], capsys
) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    (tmp_path / "budgets.toml").write_text(budgets)
    (tmp_path / "phases.tsv").write_text(phases)
    code = suite_times.main(
        [
            "--phases",
            str(tmp_path / "phases.tsv"),
            "--junit",
            str(_junit(tmp_path / "junit.xml", seconds)),
            "--budgets",
            str(tmp_path / "budgets.toml"),
        ]
    )
    out = capsys.readouterr()
    return code, out.out + out.err


BUDGET = "wall = 1800\n[phases]\nlint = 100\n[suites]\napi = 0.5\ndeploy = 0.6\n"


def test_within_budget_prints_each_phase_and_suite_and_passes(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, out = _run(
        tmp_path, BUDGET, "lint\t60\npytest\t900\ntotal\t1000\n", {"api": [10, 30], "deploy": [60]}, capsys
    )
    assert code == 0, out
    assert "wall time 16 min 40 s" in out
    assert "tests/deploy" in out and "60.0%" in out and "tests/api" in out and "40.0%" in out
    assert "(3 tests)" in out
    assert out.rstrip().endswith("tests: 3 passed, 0 failed")


def test_a_suite_past_its_share_fails_naming_it(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, out = _run(tmp_path, BUDGET, "total\t1000\n", {"api": [10], "deploy": [90]}, capsys)
    assert code == 1
    assert "suite tests/deploy took 90.0% of the tests' time (90 s), past its budget of 60.0%" in out
    assert "tests/api took" not in out


def test_a_new_suite_without_a_budget_fails(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, out = _run(tmp_path, BUDGET, "total\t1000\n", {"api": [10], "deploy": [10], "tokens": [5]}, capsys)
    assert code == 1
    assert "suite tests/tokens has no budget: add its share (0.200 this run)" in out


def test_a_slow_phase_or_run_fails(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, out = _run(tmp_path, BUDGET, "lint\t101\ntotal\t1801\n", {"api": [1]}, capsys)
    assert code == 1
    assert "phase lint took 101 s, past its budget of 100 s" in out
    assert "the whole run took 1801 s, past its budget of 1800 s" in out


@pytest.mark.parametrize(
    ("budgets", "named"),
    [
        ("[suites]\napi = 0.5\n", "wall"),
        ("wall = 10\n[suites]\napi = 1.5\n", "suites.api"),
        ("wall = 10\n[phases]\nlint = 'soon'\n", "phases.lint"),
        ("wall = [\n", "budgets.toml"),
    ],
    ids=["no-wall", "share-over-one", "phase-not-a-number", "not-toml"],
)
def test_a_bad_budget_file_is_refused_naming_the_key(
    tmp_path: Path, capsys, budgets: str, named: str
) -> None:  # type: ignore[no-untyped-def]
    code, out = _run(tmp_path, budgets, "total\t1\n", {"api": [1]}, capsys)
    assert code == 2
    assert named in out


def test_every_suite_of_the_project_has_a_budget() -> None:
    """A folder of tests/ added without a budget fails here, before any run measures it."""
    budgets = tomllib.loads(BUDGETS.read_text())
    suites = {p.name for p in (PROJECT_ROOT / "tests").iterdir() if p.is_dir() and any(p.glob("test_*.py"))}
    assert suites - set(budgets["suites"]) == set()
    assert set(budgets["suites"]) - suites == set(), "budgets for suites that no longer exist"
    # Within CI's hard limit: the whole run within its 90 minutes less a fresh machine's bootstrap (about ten
    # minutes), pytest within the whole run. The goals (30 minutes warm, 45 fresh) are tighter than this and
    # were met until 2026-11-28; on the slower machine since, the budgets follow measured runs
    # (tests/budgets.toml says by how much), and every closing note says both wall times against the goals.
    budgets = suite_times.read_budgets(BUDGETS)
    assert budgets.wall <= 80 * 60
    assert budgets.phases["pytest"] <= budgets.wall
