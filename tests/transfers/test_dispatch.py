"""Dispatch rules against the database: strict priority, activity shares, caps, expiry, optimizer.

These tests run inside a rolled-back transaction, where on-commit hooks never fire: dispatch admits files
and creates attempts, but no copy is started, so each test plays the copies' outcomes itself."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest
from django.utils import timezone

from transfers.choices import FileState, JobState, OptimizerMode
from transfers.models import ActivityShare, LinkLimit, OptimizerDecision, StorageElementLimit, TransferFile
from transfers.services import FileRequest, dispatch, submit_job
from transfers.services.optimization import optimize_links

pytestmark = pytest.mark.django_db
SRC, DST = "root://src.example.org:1094", "root://dst.example.org:1094"


def job(n: int, *, priority: int = 3, activity: str = "default", source: str = SRC, dest: str = DST, **kw):  # type: ignore[no-untyped-def]
    # URLs carry no raw spaces (an activity's name may).
    stem = f"{activity.replace(' ', '_')}-{priority}"
    return submit_job(
        files=[FileRequest(f"{source}//data/{stem}-{i}", f"{dest}//data/{stem}-{i}") for i in range(n)],
        priority=priority,
        activity=activity,
        **kw,
    )


def admitted_now() -> list[TransferFile]:
    return list(TransferFile.objects.filter(state=FileState.ACTIVE).select_related("job").order_by("id"))


def finish_active() -> None:
    TransferFile.objects.filter(state=FileState.ACTIVE).update(
        state=FileState.FINISHED, finish_time=timezone.now()
    )


def test_strict_priority_within_a_link():
    LinkLimit.objects.create(source_se=SRC, dest_se=DST, max_active=2)
    low = job(4, priority=2)
    high = job(3, priority=5)
    order = []
    for _ in range(6):
        dispatch()
        order += [row.job_id for row in admitted_now()]
        finish_active()
    assert order == [high.pk] * 3 + [low.pk] * 4


def test_activity_shares_split_a_links_slots_by_weight():
    LinkLimit.objects.create(source_se=SRC, dest_se=DST, max_active=4)
    ActivityShare.objects.create(activity="SKA Data Products", weight=3)
    ActivityShare.objects.create(activity="User Subscriptions", weight=1)
    job(100, activity="SKA Data Products")
    job(100, activity="User Subscriptions")
    counts: Counter[str] = Counter()
    while sum(counts.values()) < 80:
        dispatch()
        rows = admitted_now()
        assert len(rows) <= 4
        counts.update(row.activity for row in rows)
        finish_active()
    assert counts["SKA Data Products"] == pytest.approx(60, abs=2)
    assert counts["User Subscriptions"] == pytest.approx(20, abs=2)


def test_destination_inbound_cap_binds_across_links():
    StorageElementLimit.objects.create(storage_element=DST, inbound_max_active=3, outbound_max_active=100)
    job(5, source="root://a.example.org:1094")
    job(5, source="root://b.example.org:1094")
    dispatch()
    assert len(admitted_now()) == 3


def test_default_link_limit_comes_from_settings(settings):
    settings.SRCNET_TRANSFERS = {**settings.SRCNET_TRANSFERS, "DEFAULT_MAX_ACTIVE_PER_LINK": 3}
    job(10)
    dispatch()
    assert len(admitted_now()) == 3


def test_no_more_copies_run_than_the_workers_have_slots_for(settings):
    """srcnet/workers.py: the dispatcher admits at most COPY_SLOTS copies at once over all links (each one
    then has a worker process waiting for it); a slot freed is taken at the next dispatch, oldest first."""
    settings.SRCNET_TRANSFERS = {**settings.SRCNET_TRANSFERS, "COPY_SLOTS": 5}
    LinkLimit.objects.create(source_se="*", dest_se="*", max_active=4)
    first = job(6, source="root://a.example.org:1094")
    second = job(6, source="root://b.example.org:1094")
    dispatch()
    rows = admitted_now()
    assert len(rows) == 5  # 8 by the two links' limits
    assert Counter(row.job_id for row in rows) == {first.pk: 4, second.pk: 1}
    TransferFile.objects.filter(pk=rows[0].pk).update(state=FileState.FINISHED, finish_time=timezone.now())
    dispatch()
    assert len(admitted_now()) == 5
    dispatch()  # nothing has finished: nothing more is admitted
    assert len(admitted_now()) == 5


def test_an_optimized_link_starts_half_way_then_follows_decisions():
    LinkLimit.objects.create(
        source_se="*", dest_se="*", min_active=1, max_active=7, optimizer_mode=OptimizerMode.NORMAL
    )
    job(20)
    dispatch()
    assert len(admitted_now()) == 4
    OptimizerDecision.objects.create(source_se=SRC, dest_se=DST, active=6, rationale="test")
    dispatch()
    assert len(admitted_now()) == 6


def test_files_that_waited_too_long_fail_with_the_fts_reason():
    expired = job(2, expires=timezone.now() - timedelta(seconds=1))
    dispatch()
    expired.refresh_from_db()
    assert expired.state == JobState.FAILED
    assert set(expired.files.values_list("reason", flat=True)) == {
        "Job has been canceled because it stayed in the queue for too long"
    }


def _history(*, ok: int, failed: int, seconds: float = 10.0) -> None:
    """Copies that ended in the last minutes on the link, as the worker records them."""
    from transfers.models import TransferAttempt

    now = timezone.now()
    done = job(ok + failed, activity="history")
    for index, row in enumerate(done.files.all()):
        succeeded = index < ok
        row.state = FileState.FINISHED if succeeded else FileState.FAILED
        row.finish_time, row.duration_seconds, row.transferred_bytes = now, seconds, 10**9 if succeeded else 0
        row.attempts = 1
        row.save()
        TransferAttempt.objects.create(
            file=row, number=1, state="SUCCEEDED" if succeeded else "FAILED", claimed=now, finished=now
        )


def test_optimizer_moves_a_healthy_link_up_and_a_failing_one_down():
    LinkLimit.objects.create(
        source_se="*", dest_se="*", min_active=1, max_active=20, optimizer_mode=OptimizerMode.NORMAL
    )
    OptimizerDecision.objects.create(source_se=SRC, dest_se=DST, active=5, ema_bps=1e6, rationale="before")
    _history(ok=20, failed=0)
    job(30)  # a queue to serve
    (healthy,) = optimize_links()
    assert healthy.active == 7 and "rising" in healthy.rationale
    _history(ok=0, failed=20)
    (failing,) = optimize_links()
    assert failing.active == 6 and "success rate" in failing.rationale


def test_a_paused_link_admits_nothing_until_resumed():
    from transfers.services import pause_link, resume_link

    pause_link(source_se=SRC, dest_se=DST, reason="maintenance")
    job(3)
    dispatch()
    assert admitted_now() == []
    assert resume_link(source_se=SRC, dest_se=DST) is True
    dispatch()
    assert len(admitted_now()) == 3
