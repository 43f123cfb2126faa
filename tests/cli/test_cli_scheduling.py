"""``srcnet plan`` and ``srcnet simulations`` against the live server (a real Celery worker simulates)."""

from __future__ import annotations

import json

from cli.exit_codes import ExitCode
from replicas.services import FileSpec, register_product
from topology.models import Telescope


def test_plan_show_lists_the_legs(srcnet, topology):
    register_product(
        scope="ska",
        name="obs-plan",
        telescope=Telescope.objects.get(name="SKA1-Low"),
        priority=4,
        files=[FileSpec("f.ms", 5 * 10**9, "0cc737eb")],
    )
    result = srcnet("plan", "show")
    assert result.code == ExitCode.OK, result.err
    assert "ska:obs-plan" in result.out and "SKA1-Low" in result.out and "1 products waiting" in result.err
    as_json = json.loads(srcnet("plan", "show", "-o", "json").out)
    assert as_json["legs"][0]["product"] == "ska:obs-plan"


def test_simulations_run_waits_and_downloads_the_report(srcnet, topology, celery_worker, tmp_path, settings):
    out = tmp_path / "report"
    result = srcnet(
        "simulations",
        "run",
        "--scenario",
        "one_replica",
        "--days",
        "0.05",
        "--topology",
        "reference",
        "--no-lp",
        "--out",
        str(out),
        "--interval",
        "0.5",
        "--timeout",
        "300",
    )
    assert result.code == ExitCode.OK, result.err
    assert (out / "report.md").read_text().count("one_replica") >= 1
    assert json.loads((out / "summary.json").read_text())[0]["name"] == "one_replica"
    assert "one_replica" in result.out and "report written to" in result.err
    assert srcnet("simulations", "list").code == ExitCode.OK


def test_simulations_run_rejects_a_bad_scenario(srcnet, topology, tmp_path):
    result = srcnet("simulations", "run", "--scenario", "warp", "--out", str(tmp_path / "r"))
    assert result.code == ExitCode.VALIDATION and "scenario" in result.err
