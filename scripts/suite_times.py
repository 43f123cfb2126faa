"""Where `make test`'s time went, checked against tests/budgets.toml.

scripts/test.sh records each phase's seconds (lint, native builds, ctest, fuzzing, pytest) and pytest writes
a JUnit report; this prints the wall time, each phase, and each test suite (a folder of ``tests/``: the
seconds of its tests, set-up and teardown included, summed over the pytest workers, and its share of all the
tests' seconds), then fails (exit 1) naming every figure past its budget:

- the whole run's wall time past ``wall``;
- a phase past its seconds in ``[phases]``;
- a suite whose share grew past its budget in ``[suites]``, or a suite that has no budget yet (a new suite
  states what it costs when it is added).

Usage: suite_times.py --phases FILE --junit FILE [--junit FILE...] --budgets FILE. Exit 0 within budget, 1
past it, 2 when an input is missing or malformed (the message names the file and, for the budgets, the key).
The last line counts every test of the reports: "tests: N passed, N failed"."""

from __future__ import annotations

import argparse
import sys
import tomllib
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field
from pathlib import Path


class InputError(Exception):
    """An input file is missing or malformed."""


@dataclass(frozen=True)
class Budgets:
    wall: float
    phases: dict[str, float]
    suites: dict[str, float]  # suite -> largest share of the tests' seconds, 0..1


@dataclass
class Timings:
    phases: dict[str, float]  # in the order they ran; "total" is the wall time
    suites: dict[str, float] = field(default_factory=dict)  # suite -> seconds summed over its tests
    tests: int = 0

    @property
    def wall(self) -> float:
        return self.phases.get("total", sum(v for k, v in self.phases.items() if k != "total"))

    def share(self, suite: str) -> float:
        total = sum(self.suites.values())
        return self.suites[suite] / total if total else 0.0


def read_budgets(path: Path) -> Budgets:
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise InputError(f"{path}: {error}") from error

    def number(value: object, key: str) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise InputError(f"{path}: {key} must be a positive number, not {value!r}")
        return float(value)

    if "wall" not in data:
        raise InputError(f"{path}: wall (the whole run's seconds) is missing")
    phases = {name: number(v, f"phases.{name}") for name, v in data.get("phases", {}).items()}
    suites = {name: number(v, f"suites.{name}") for name, v in data.get("suites", {}).items()}
    for name, share in suites.items():
        if share > 1:
            raise InputError(f"{path}: suites.{name} is a share of the tests' time, at most 1, not {share}")
    return Budgets(wall=number(data["wall"], "wall"), phases=phases, suites=suites)


def read_phases(path: Path) -> dict[str, float]:
    phases: dict[str, float] = {}
    try:
        lines = path.read_text().splitlines()
    except OSError as error:
        raise InputError(f"{path}: {error}") from error
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        name, _, seconds = line.partition("\t")
        try:
            phases[name] = float(seconds)
        except ValueError as error:
            raise InputError(f"{path}:{number}: not 'phase<TAB>seconds': {line!r}") from error
    return phases


def suite_of(classname: str) -> str:
    """``tests.deploy.test_site`` (or ``tests.deploy.test_site.TestX``) -> ``deploy``."""
    parts = classname.split(".")
    return parts[1] if len(parts) > 2 and parts[0] == "tests" else "(top level)"


def read_junit(path: Path) -> tuple[dict[str, float], int, int]:
    """Seconds per suite, the tests reported, and how many of them failed (a failure or an error)."""
    try:
        root = ElementTree.parse(path).getroot()
    except (OSError, ElementTree.ParseError) as error:
        raise InputError(f"{path}: {error}") from error
    suites: dict[str, float] = {}
    count = failed = 0
    for case in root.iter("testcase"):
        suite = suite_of(case.get("classname", ""))
        suites[suite] = suites.get(suite, 0.0) + float(case.get("time") or 0)
        count += 1
        failed += case.find("failure") is not None or case.find("error") is not None
    return suites, count, failed


def over_budget(timings: Timings, budgets: Budgets) -> list[str]:
    """Every figure past its budget, as a sentence naming it; empty when all are within."""
    problems = []
    if timings.wall > budgets.wall:
        problems.append(f"the whole run took {timings.wall:.0f} s, past its budget of {budgets.wall:.0f} s")
    for name, seconds in timings.phases.items():
        if name in budgets.phases and seconds > budgets.phases[name]:
            problems.append(
                f"phase {name} took {seconds:.0f} s, past its budget of {budgets.phases[name]:.0f} s"
            )
    for suite in timings.suites:
        share = timings.share(suite)
        if suite not in budgets.suites:
            problems.append(
                f"suite tests/{suite} has no budget: add its share ({share:.3f} this run) to [suites]"
            )
        elif share > budgets.suites[suite]:
            problems.append(
                f"suite tests/{suite} took {share:.1%} of the tests' time "
                f"({timings.suites[suite]:.0f} s), past its budget of {budgets.suites[suite]:.1%}"
            )
    return problems


def report(timings: Timings, budgets: Budgets) -> str:
    minutes, seconds = divmod(round(timings.wall), 60)
    lines = [f"make test: wall time {minutes} min {seconds:02d} s (budget {budgets.wall:.0f} s)", ""]
    lines.append(f"{'phase':<14}{'seconds':>9}{'budget':>9}")
    for name, took in timings.phases.items():
        if name == "total":
            continue
        budget = budgets.phases.get(name)
        lines.append(f"{name:<14}{took:>9.0f}{budget if budget is not None else '-':>9}")
    lines += ["", f"{'suite':<16}{'seconds':>9}{'share':>8}{'budget':>8}   ({timings.tests} tests)"]
    for suite, took in sorted(timings.suites.items(), key=lambda item: -item[1]):
        budget = budgets.suites.get(suite)
        shown = f"{budget:.1%}" if budget is not None else "none"
        lines.append(f"{'tests/' + suite:<16}{took:>9.0f}{timings.share(suite):>8.1%}{shown:>8}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--phases", type=Path, required=True)
    parser.add_argument("--junit", type=Path, action="append", required=True, help="repeat for each report")
    parser.add_argument("--budgets", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        budgets = read_budgets(args.budgets)
        timings = Timings(phases=read_phases(args.phases))
        failed = 0
        for report_file in args.junit:
            suites, count, failures = read_junit(report_file)
            for suite, seconds in suites.items():
                timings.suites[suite] = timings.suites.get(suite, 0.0) + seconds
            timings.tests += count
            failed += failures
    except InputError as error:
        print(f"suite_times: {error}", file=sys.stderr)
        return 2
    print(report(timings, budgets))
    problems = over_budget(timings, budgets)
    for problem in problems:
        print(f"suite_times: over budget: {problem}", file=sys.stderr)
    # Every pytest process of the run together (the workers' and the serial one), as one closing line.
    print(f"tests: {timings.tests - failed} passed, {failed} failed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
