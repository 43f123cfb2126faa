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


def test_recurring_campaigns_from_the_shell(campaigns_cli, topology):
    from django_celery_beat.models import PeriodicTask

    base = ["campaigns", "run", "--source", "SKA1-Low", "--destination", "UKSRC_DISK", "--rate", "16M"]
    result = campaigns_cli(*base, "--duration", "30", "--every", "1h")
    assert result.code == ExitCode.OK, result.err
    assert "recurring" in result.err and "starts a new run every 3600 s" in result.err  # no waiting
    template = json.loads(campaigns_cli("campaigns", "list", "-o", "json").out)[0]
    assert template["state"] == "recurring" and template["every_seconds"] == 3600
    task = PeriodicTask.objects.get(name=f"campaign {template['id']}")
    assert task.enabled and task.interval is not None and task.interval.every == 3600
    result = campaigns_cli(*base, "--duration", "30", "--cron", "0 2 * * *", "-o", "json")
    assert result.code == ExitCode.OK and json.loads(result.out)["cron"] == "0 2 * * *", result.err
    assert "cron 0 2 * * *" in campaigns_cli("campaigns", "list").out
    # Disable, enable, delete.
    shown = campaigns_cli("campaigns", "stop", str(template["id"])).out
    fields = dict(line.split(None, 1) for line in shown.splitlines() if len(line.split(None, 1)) == 2)
    assert fields["state"] == "stopped" and fields["schedule"] == "every 3600 s", shown
    assert not PeriodicTask.objects.get(pk=task.pk).enabled
    assert campaigns_cli("campaigns", "resume", str(template["id"])).code == ExitCode.OK
    assert PeriodicTask.objects.get(pk=task.pk).enabled
    result = campaigns_cli("campaigns", "delete", str(template["id"]))
    assert result.code == ExitCode.OK and "deleted" in result.err
    assert not PeriodicTask.objects.filter(pk=task.pk).exists()
    assert campaigns_cli("campaigns", "show", str(template["id"])).code == ExitCode.NOT_FOUND
    # Bad schedules: the server names the field; bad syntax is a usage error.
    result = campaigns_cli(*base, "--duration", "30", "--every", "2")
    assert result.code == ExitCode.VALIDATION and "every_seconds" in result.err
    result = campaigns_cli(*base, "--duration", "30", "--cron", "61 * * * *")
    assert result.code == ExitCode.VALIDATION and "cron" in result.err
    assert campaigns_cli(*base, "--duration", "30", "--every", "soon").code == ExitCode.USAGE
    assert (
        campaigns_cli(*base, "--duration", "30", "--every", "1h", "--cron", "0 * * * *").code
        == ExitCode.USAGE
    )


def test_campaign_is_an_alias_of_campaigns(campaigns_cli, topology):
    """``srcnet campaign ...`` (as issue 7 writes it) runs the same commands as ``srcnet campaigns ...``."""
    run = ["run", "--source", "SKA1-Low", "--destination", "UKSRC_DISK", "--rate", "16M", "--duration", "30"]
    # Recurring: created and returned at once, nothing queued for a worker.
    result = campaigns_cli("campaign", *run, "--every", "1h")
    assert result.code == ExitCode.OK, result.err
    singular, plural = campaigns_cli("campaign", "list"), campaigns_cli("campaigns", "list")
    assert singular.code == plural.code == ExitCode.OK, singular.err
    assert singular.out == plural.out and "every 3600 s" in singular.out
    campaigns = json.loads(campaigns_cli("campaign", "list", "-o", "json").out)
    assert campaigns == json.loads(campaigns_cli("campaigns", "list", "-o", "json").out)
    assert len(campaigns) == 1 and campaigns[0]["state"] == "recurring"
    campaign_id = str(campaigns[0]["id"])
    assert (
        campaigns_cli("campaign", "show", campaign_id).out
        == campaigns_cli("campaigns", "show", campaign_id).out
    )
    assert campaigns_cli("campaign", "delete", campaign_id).code == ExitCode.OK
    assert campaigns_cli("campaign", "show", campaign_id).code == ExitCode.NOT_FOUND
    assert campaigns_cli("campaign", "report", "--help").code == ExitCode.OK
