"""The alert rules under Debian's promtool: they load, and each fires in one case and not in another."""

from __future__ import annotations

import subprocess
from collections import defaultdict
from pathlib import Path

import yaml

from localnet.state import PROJECT_ROOT

PROMETHEUS = PROJECT_ROOT / "monitoring" / "prometheus"
RULES = sorted((PROMETHEUS / "rules").glob("*.yml"))
CASES = sorted((PROMETHEUS / "tests").glob("*_test.yml"))


def promtool(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["promtool", *map(str, args)], capture_output=True, text=True, timeout=120, cwd=PROMETHEUS
    )


def alert_names() -> set[str]:
    return {
        rule["alert"]
        for path in RULES
        for group in yaml.safe_load(path.read_text())["groups"]
        for rule in group["rules"]
        if "alert" in rule
    }


def test_the_rules_load() -> None:
    assert RULES
    result = promtool("check", "rules", *RULES)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(alert_names())} rules found" in result.stdout


def test_the_rule_cases_pass() -> None:
    result = promtool("test", "rules", *CASES)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_every_alert_has_a_firing_and_a_silent_case() -> None:
    firing: dict[str, int] = defaultdict(int)
    silent: dict[str, int] = defaultdict(int)
    for path in CASES:
        for case in yaml.safe_load(path.read_text())["tests"]:
            for check in case.get("alert_rule_test", []):
                (firing if check["exp_alerts"] else silent)[check["alertname"]] += 1
    assert alert_names() == set(firing) == set(silent)


def test_a_broken_case_fails(tmp_path: Path) -> None:
    """promtool really compares: a case expecting the wrong labels fails."""
    broken = tmp_path / "broken_test.yml"
    case = yaml.safe_load(CASES[0].read_text())
    case["rule_files"] = [str(path) for path in RULES]
    for test in case["tests"]:
        for check in test.get("alert_rule_test", []):
            for alert in check["exp_alerts"]:
                alert["exp_labels"]["severity"] = "page"
    broken.write_text(yaml.safe_dump(case))
    result = promtool("test", "rules", broken)
    assert result.returncode != 0
    assert "FAILED" in result.stdout + result.stderr
