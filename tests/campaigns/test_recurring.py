"""Recurring campaigns: the schedule's validation, its periodic task in django-celery-beat's database
schedule (enable, disable, delete), and runs really fired by a Celery worker running beat on that
schedule, the same command line as the local network's worker."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.core.exceptions import ValidationError
from django_celery_beat.models import CrontabSchedule, PeriodicTask

from campaigns.models import Campaign
from campaigns.services import RUN_FIELDS, advance, create_campaign, fire, stop
from localnet.processes import stop_pid
from localnet.stack import (
    BEAT_SCHEDULER,
    platform_process,
    spawn_platform_process,
    wait_for_worker,
    worker_argv,
)
from localnet.state import StateDir
from tests.campaigns.inputs import GOOD
from tests.conftest import wait_until

BAD_SCHEDULES = [
    ({"every_seconds": 0}, "every_seconds"),
    ({"every_seconds": 2}, "every_seconds"),
    ({"every_seconds": 400 * 86400}, "every_seconds"),
    ({"cron": "every hour"}, "cron"),
    ({"cron": "61 * * * *"}, "cron"),
    ({"cron": "0 25 * * *"}, "cron"),
    ({"cron": "0 * * *"}, "cron"),
    ({"every_seconds": 60, "cron": "0 * * * *"}, "cron"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("change", "field"), BAD_SCHEDULES)
def test_the_model_rejects_bad_schedules(reference_topology, change, field):
    with pytest.raises(ValidationError) as caught:
        Campaign(**GOOD, **change).full_clean()
    assert list(caught.value.message_dict) == [field], caught.value.message_dict


@pytest.mark.django_db
def test_a_run_does_not_recur_itself(reference_topology):
    template = Campaign.objects.create(**GOOD, every_seconds=60, state=Campaign.State.RECURRING)
    with pytest.raises(ValidationError) as caught:
        Campaign(**GOOD, template=template, every_seconds=60).full_clean()
    assert "every_seconds" in caught.value.message_dict
    Campaign(**GOOD, cron="*/5 * * * mon-fri").full_clean()  # a good cron passes


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("change", "field"),
    [*BAD_SCHEDULES, ({"every_seconds": -60}, "every_seconds"), ({"every_seconds": "1h"}, "every_seconds")],
)
def test_bad_schedules_are_400_naming_the_field(operator_client, reference_topology, change, field):
    response = operator_client.post("/api/campaigns/", {**GOOD, **change}, format="json")
    assert response.status_code == 400 and field in response.json(), response.json()
    assert not Campaign.objects.exists() and not PeriodicTask.objects.exists()


@pytest.mark.django_db
def test_a_recurring_campaign_is_a_periodic_task_that_stop_resume_and_delete_follow(
    operator_client, scientist_client, reference_topology
):
    response = operator_client.post("/api/campaigns/", {**GOOD, "every_seconds": 3600}, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["state"] == "recurring" and body["every_seconds"] == 3600 and body["runs"] == []
    template = Campaign.objects.get(pk=body["id"])
    task = PeriodicTask.objects.get(pk=template.periodic_task_id)
    assert task.task == "campaigns.fire" and task.args == f"[{template.pk}]" and task.enabled
    assert task.interval is not None and (task.interval.every, task.interval.period) == (3600, "seconds")
    assert task.start_time is not None and task.last_run_at is None  # the first run at the start
    # Stop disables the periodic task (and a firing already queued does nothing); resume enables it.
    assert operator_client.post(f"/api/campaigns/{template.pk}/stop/").json()["state"] == "stopped"
    assert not PeriodicTask.objects.get(pk=task.pk).enabled
    assert fire(template.pk) == "not recurring (stopped)" and not template.runs.exists()
    assert operator_client.post(f"/api/campaigns/{template.pk}/resume/").json()["state"] == "recurring"
    assert PeriodicTask.objects.get(pk=task.pk).enabled
    # A cron schedule: the same crontab beat parses, in UTC; the first run at its next time.
    response = operator_client.post(
        "/api/campaigns/", {**GOOD, "name": "nightly", "cron": "30 2 * * 1-5"}, format="json"
    )
    assert response.status_code == 201, response.json()
    cron_task = Campaign.objects.get(pk=response.json()["id"]).periodic_task
    assert cron_task is not None and cron_task.last_run_at is not None
    crontab = CrontabSchedule.objects.get(pk=cron_task.crontab_id)
    assert (crontab.minute, crontab.hour, crontab.day_of_week, str(crontab.timezone)) == (
        "30",
        "2",
        "1-5",
        "UTC",
    )
    # Delete: operators only, templates only; the periodic task goes, the runs stay.
    assert fire(template.pk).startswith("run ")
    run = template.runs.get()
    assert scientist_client.delete(f"/api/campaigns/{template.pk}/").status_code == 403
    assert operator_client.delete(f"/api/campaigns/{run.pk}/").status_code == 409
    assert operator_client.delete(f"/api/campaigns/{template.pk}/").status_code == 204
    assert not PeriodicTask.objects.filter(pk=task.pk).exists()
    run.refresh_from_db()
    assert run.template_id is None
    Campaign.objects.filter(name="nightly").delete()  # any delete (admin, shell) takes the task along
    assert not PeriodicTask.objects.filter(name__startswith="campaign ").exists()


@pytest.mark.django_db
def test_each_firing_starts_a_run_with_the_templates_parameters_and_runs_never_overlap(
    reference_topology, operator
):
    template = create_campaign(user=operator, **GOOD, every_seconds=60)
    assert advance(template.pk, 0) == "recurring"  # a template never runs itself
    assert fire(template.pk).startswith("run ")
    run = template.runs.get()
    assert run.name == "dc-1 #1" and run.state == Campaign.State.SCHEDULED and run.created_by == operator
    assert {f: getattr(run, f) for f in RUN_FIELDS} == {f: getattr(template, f) for f in RUN_FIELDS}
    assert not run.is_recurring and run.periodic_task_id is None
    assert fire(template.pk) == f"skipped: run {run.pk} is scheduled"
    Campaign.objects.filter(pk=run.pk).update(state=Campaign.State.FINISHED)
    assert fire(template.pk).startswith("run ")
    assert sorted(template.runs.values_list("name", flat=True)) == ["dc-1 #1", "dc-1 #2"]
    stop(template)
    assert fire(template.pk) == "not recurring (stopped)" and template.runs.count() == 2


# --- a real Celery beat and worker ---------------------------------------------------------------------


@pytest.fixture
def beat_worker(transactional_db, test_state: StateDir) -> Iterator[Path]:  # type: ignore[no-untyped-def]
    """A Celery worker running beat on the database schedule (``localnet.stack.worker_argv(beat=True)``,
    what the local network runs), on the test database, with the push loop every 5 s; yields its log."""
    env, account = platform_process(test_state, test_state.path.name)
    env["SRCNET_DB_NAME"] = str(settings.DATABASES["default"]["NAME"])
    env["SRCNET_PUSH_INTERVAL"] = "5"
    log = test_state.sub("log") / f"pytest-beat-worker-{os.getpid()}.log"
    argv = worker_argv(f"pytest-beat-{os.getpid()}@%h", concurrency=2, beat=True)
    assert argv[-2:] == ["--scheduler", BEAT_SCHEDULER]
    proc = spawn_platform_process(argv, env, account, log)
    try:
        wait_for_worker(proc, log)
        yield log
    finally:
        # Before the test's tables are flushed: a warm shutdown lets a run under way finish.
        stop_pid(proc.pid, timeout=30)


@pytest.mark.integration
def test_beat_fires_a_recurring_campaign_and_the_periodic_tasks(topology, operator, beat_worker, settings):
    from schedulers.models import PushCycle

    template = create_campaign(
        user=operator,
        name="sim-every-5s",
        mode="simulated",
        topology="reference",
        sources=["SKA1-Low"],
        destinations=["UKSRC_DISK"],
        target_rate_bps=46e9,
        duration_seconds=3600,  # one simulated hour: a few seconds of simulator
        min_file_bytes=10 * 10**9,
        max_file_bytes=90 * 10**9,
        every_seconds=5,
    )

    def finished_runs() -> int:
        return template.runs.filter(state=Campaign.State.FINISHED).count()

    wait_until(lambda: finished_runs() >= 2, timeout=90, interval=0.5, what="two runs fired by beat")
    for run in template.runs.filter(state=Campaign.State.FINISHED):
        assert run.summary["products"] > 0 and run.mode == "simulated" and run.duration_seconds == 3600
    # The static CELERY_BEAT_SCHEDULE entries fire through the same database scheduler.
    wait_until(PushCycle.objects.exists, timeout=30, what="a push cycle run by beat")
    log = beat_worker.read_text(errors="replace")
    assert "DatabaseScheduler" in log and "Sending due task transfers-dispatch-sweep" in log
    # Disabled: beat drops the periodic task (it checks its schedule every 5 s) and no run starts.
    stop(template)
    sent = f"Sending due task campaign {template.pk} "
    time.sleep(7)
    fired_after_stop, runs_after_stop = (
        beat_worker.read_text(errors="replace").count(sent),
        template.runs.count(),
    )
    time.sleep(8)
    assert beat_worker.read_text(errors="replace").count(sent) == fired_after_stop
    assert template.runs.count() == runs_after_stop
