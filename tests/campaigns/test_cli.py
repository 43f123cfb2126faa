"""``srcnet campaigns`` against the live server, with a real Celery worker running the campaign."""

from __future__ import annotations

import json

from cli.exit_codes import ExitCode


def test_run_show_report_list_a_simulated_campaign(campaigns_cli, topology, celery_worker, tmp_path):
    srcnet = campaigns_cli
    result = srcnet(
        "campaigns",
        "run",
        "--mode",
        "simulated",
        "--topology",
        "reference",
        "--source",
        "SKA1-Low",
        "--destination",
        "UKSRC_DISK",
        "--rate",
        "46G",
        "--duration",
        "7200",
        "--file-size",
        "10G:90G",
        "--interval",
        "0.5",
        "--timeout",
        "300",
    )
    assert result.code == ExitCode.OK, result.err
    assert "created (simulated, scheduled)" in result.err and "finished" in result.err
    assert "achieved" in result.out and "46.0 Gbit/s" in result.out
    campaign_id = json.loads(srcnet("campaigns", "list", "-o", "json").out)[0]["id"]
    shown = json.loads(srcnet("campaigns", "show", str(campaign_id), "-o", "json").out)
    assert shown["state"] == "finished" and shown["summary"]["products"] > 0
    out = tmp_path / "report"
    result = srcnet("campaigns", "report", str(campaign_id), "--out", str(out))
    assert result.code == ExitCode.OK, result.err
    downloaded = json.loads((out / "summary.json").read_text())
    assert downloaded == shown["summary"]["simulator"]
    assert (out / "rate.png").read_bytes()[:4] == b"\x89PNG" and (out / "samples.csv").is_file()
    assert "simulated" in srcnet("campaigns", "list").out


def test_bad_input_names_the_field(campaigns_cli, topology):
    result = campaigns_cli(
        "campaigns",
        "run",
        "--source",
        "Atlantis",
        "--destination",
        "UKSRC_DISK",
        "--rate",
        "1M",
        "--duration",
        "5",
    )
    assert result.code == ExitCode.VALIDATION and "sources" in result.err
    result = campaigns_cli("campaigns", "run", "--source", "SKA1-Low", "--destination", "X", "--rate", "fast")
    assert result.code == ExitCode.USAGE


def test_run_a_real_campaign_shows_live_progress_then_the_score(
    campaigns_cli, bound_topology, celery_worker, tmp_path
):
    result = campaigns_cli(
        "campaigns",
        "run",
        "--source",
        "SKA1-Low",
        "--destination",
        "UKSRC_DISK",
        "--rate",
        "16M",
        "--duration",
        "6",
        "--file-size",
        "1M:2M",
        "--interval",
        "1",
        "--timeout",
        "240",
    )
    assert result.code == ExitCode.OK, result.err
    assert "achieved" in result.err and "vs target 16.0 Mbit/s" in result.err  # live, on stderr
    score = dict(line.split(None, 1) for line in result.out.splitlines() if len(line.split(None, 1)) == 2)
    assert score["state"] == "finished" and float(score["success_rate"]) == 1.0
    assert score["products"] == score["complete"]
    campaign_id = json.loads(campaigns_cli("campaigns", "list", "-o", "json").out)[0]["id"]
    out = tmp_path / "real-report"
    assert campaigns_cli("campaigns", "report", str(campaign_id), "--out", str(out)).code == ExitCode.OK
    rows = (out / "samples.csv").read_text().splitlines()
    assert rows[0].startswith("elapsed_seconds,") and "UKSRC_DISK_achieved_bytes" in rows[0] and len(rows) > 2
    assert (out / "destinations.png").read_bytes()[:4] == b"\x89PNG"
