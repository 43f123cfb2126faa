"""Execution rules without copies: the default timeout, which streams a copy gets, the per-storage outbound
cap, and the optimizer's 97 % success threshold."""

from __future__ import annotations

import pytest

from transfers.executor import MIB, default_timeout
from transfers.models import LinkLimit, TransferFile
from transfers.services import FileRequest, stream_settings, submit_job

SRC, DST = "root://src.example.org:1094", "root://dst.example.org:1094"


@pytest.mark.parametrize(
    ("size", "seconds"),
    [(None, 600), (0, 600), (1, 602), (MIB, 602), (MIB + 1, 604), (1000 * MIB, 2600)],
)
def test_default_timeout_is_fts3s(size, seconds):
    assert default_timeout(size) == seconds


@pytest.mark.django_db
def test_streams_come_from_the_job_then_the_most_specific_link_row():
    def row(**params):  # type: ignore[no-untyped-def]
        job = submit_job(files=[FileRequest(f"{SRC}//d/x", f"{DST}//d/x")], internal_params=params or None)
        return TransferFile.objects.select_related("job").get(job=job)

    assert stream_settings(row()) == (None, None)  # gfal2's default
    LinkLimit.objects.create(source_se="*", dest_se="*", max_active=4, nostreams=2)
    assert stream_settings(row()) == (2, None)
    # A more specific row without nostreams does not hide the default; one with nostreams wins.
    LinkLimit.objects.create(source_se=SRC, dest_se="*", max_active=4)
    assert stream_settings(row()) == (2, None)
    LinkLimit.objects.create(source_se=SRC, dest_se=DST, max_active=4, nostreams=6)
    assert stream_settings(row()) == (6, None)
    assert stream_settings(row(nostreams=8, buffer_size=65536)) == (8, 65536)


@pytest.mark.django_db
def test_source_outbound_cap_binds_across_links():
    from transfers.models import StorageElementLimit
    from transfers.services import dispatch

    StorageElementLimit.objects.create(storage_element=SRC, inbound_max_active=100, outbound_max_active=3)
    for dest in ("root://a.example.org:1094", "root://b.example.org:1094"):
        submit_job(files=[FileRequest(f"{SRC}//d/{i}", f"{dest}//d/{i}") for i in range(5)])
    dispatch()
    assert TransferFile.objects.filter(state="ACTIVE").count() == 3
    # Another source is not held by SRC's cap.
    submit_job(files=[FileRequest(f"root://c.example.org:1094//d/{i}", f"{DST}//d/{i}") for i in range(2)])
    dispatch()
    assert TransferFile.objects.filter(state="ACTIVE").count() == 5


def _window(success_rate: float):  # type: ignore[no-untyped-def]
    from transfers.optimizer import NORMAL, LinkWindow

    return LinkWindow(
        current=5,
        min_active=1,
        max_active=20,
        mode=NORMAL,
        throughput_bps=2e9,
        success_rate=success_rate,
        previous_ema_bps=1e9,
        queued=50,
        active=5,
    )


@pytest.mark.parametrize(
    ("success_rate", "active", "why"),
    [
        (96.0, 4, "below 97 %"),
        (96.9, 4, "below 97 %"),
        (97.0, 7, "rising"),
        (98.0, 7, "rising"),
    ],
)
def test_the_optimizer_backs_off_below_97_percent_success(success_rate, active, why):
    from transfers.optimizer import decide

    decision = decide(_window(success_rate))
    assert decision.active == active and why in decision.rationale


@pytest.mark.django_db
@pytest.mark.parametrize(("ok", "failed", "active"), [(48, 2, 4), (49, 1, 7)])
def test_the_optimizer_threshold_from_recorded_attempts(ok, failed, active):
    """96 % (48 of 50) takes a slot away, 98 % (49 of 50) does not, from the attempts in the database."""
    from django.utils import timezone

    from transfers.choices import OptimizerMode
    from transfers.models import OptimizerDecision, TransferAttempt
    from transfers.services.optimization import optimize_links

    LinkLimit.objects.create(
        source_se="*", dest_se="*", min_active=1, max_active=20, optimizer_mode=OptimizerMode.NORMAL
    )
    OptimizerDecision.objects.create(source_se=SRC, dest_se=DST, active=5, ema_bps=1e6, rationale="before")
    now = timezone.now()
    done = submit_job(files=[FileRequest(f"{SRC}//h/{i}", f"{DST}//h/{i}") for i in range(ok + failed)])
    for index, row in enumerate(done.files.all()):
        succeeded = index < ok
        row.state = "FINISHED" if succeeded else "FAILED"
        row.finish_time, row.duration_seconds, row.transferred_bytes = now, 10.0, 10**9 if succeeded else 0
        row.attempts = 1
        row.save()
        TransferAttempt.objects.create(
            file=row, number=1, state="SUCCEEDED" if succeeded else "FAILED", claimed=now, finished=now
        )
    submit_job(files=[FileRequest(f"{SRC}//q/{i}", f"{DST}//q/{i}") for i in range(30)])
    (decision,) = optimize_links()
    assert decision.active == active
