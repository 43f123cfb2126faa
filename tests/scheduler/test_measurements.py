"""Lane measurements from a job's files: what counts, and that a job counts once."""

from __future__ import annotations

import datetime as dt

import pytest

from schedulers.measurements import record_lane_measurement
from schedulers.models import PathMeasurement
from transfertools.interface import FileSpan

pytestmark = pytest.mark.django_db
T0 = dt.datetime(2026, 11, 23, 12, 0, 0, tzinfo=dt.UTC)
LANE = {"lane": ["SKA1-Low", "UKSRC"], "streams": 4, "files": 2}


def _span(start_s: float, end_s: float, size: int = 10**9, *, finished: bool = True, **kw) -> FileSpan:  # type: ignore[no-untyped-def]
    return FileSpan(
        finished=finished,
        bytes=size,
        start=T0 + dt.timedelta(seconds=start_s),
        end=T0 + dt.timedelta(seconds=end_s),
        **kw,
    )


def test_finished_files_over_their_span() -> None:
    files = [_span(0, 8), _span(2, 10), _span(1, 30, finished=False)]  # the failed file does not count
    m = record_lane_measurement(job_id="j1", metadata=LANE, files=files, succeeded=False)
    assert m is not None
    assert (m.source, m.destination, m.streams, m.files) == ("SKA1-Low", "UKSRC", 4, 2)
    assert (m.bytes, m.seconds, m.succeeded) == (2 * 10**9, 10.0, False)
    assert m.throughput_bps == pytest.approx(2 * 10**9 * 8 / 10)


def test_whole_second_times_never_shorten_a_copy_below_its_own_duration() -> None:
    m = record_lane_measurement(
        job_id="j2", metadata=LANE, files=[_span(0, 0, 3 * 2**20, duration=0.4)], succeeded=True
    )
    assert m is not None and m.seconds == pytest.approx(0.4)


@pytest.mark.parametrize(
    ("metadata", "files"),
    [
        ({}, [_span(0, 1)]),  # not a push-loop job
        ({**LANE, "multihop": True}, [_span(0, 1)]),  # a relay: two hops, not one lane
        (LANE, [_span(0, 1, finished=False)]),  # nothing arrived
        (LANE, [FileSpan(finished=True, bytes=1, start=None, end=None)]),  # no times
        # What any client of the FTS3 endpoint could write into a job's metadata: no measurement, no error.
        ({**LANE, "lane": "SKA1-Low"}, [_span(0, 1)]),  # a string, not two sites
        ({**LANE, "lane": ["SKA1-Low", 7]}, [_span(0, 1)]),
        ({**LANE, "lane": ["SKA1-Low", "U" * 65]}, [_span(0, 1)]),  # longer than a site name may be
        ({**LANE, "lane": ["A", "B", "C"]}, [_span(0, 1)]),
        ({**LANE, "streams": "four"}, [_span(0, 1)]),
        ({**LANE, "streams": 10**9}, [_span(0, 1)]),  # beyond the small integer field
        ({**LANE, "files": -2}, [_span(0, 1)]),
        ({**LANE, "files": True}, [_span(0, 1)]),
    ],
)
def test_what_is_not_a_lane_measurement(metadata: dict, files: list[FileSpan]) -> None:  # type: ignore[type-arg]
    assert record_lane_measurement(job_id="j3", metadata=metadata, files=files, succeeded=True) is None
    assert not PathMeasurement.objects.exists()


def test_a_job_is_measured_once() -> None:
    first = record_lane_measurement(job_id="j4", metadata=LANE, files=[_span(0, 5)], succeeded=True)
    again = record_lane_measurement(job_id="j4", metadata=LANE, files=[_span(0, 9)], succeeded=True)
    assert first is not None and again is None
    assert PathMeasurement.objects.get(job_id="j4").seconds == 5.0


def test_fts_times_read_back_as_written() -> None:
    from transfertools.protocol import fts_date, parse_fts_date

    stamp = fts_date(T0)
    assert stamp == "2026-11-23T12:00:00" and parse_fts_date(stamp) == T0
    assert parse_fts_date(None) is None and parse_fts_date("23/11/2026 12:00") is None


def test_a_copys_dead_time_is_its_time_beyond_its_bytes_at_its_share() -> None:
    # The lane was planned at 40 Mbit/s with 2 copies in flight: each copy's share is 20 Mbit/s, so 10 MB
    # take 4 s. The copies took 5 s and 7 s: 1 s and 3 s beyond their bytes, 2 s on average.
    planned = {**LANE, "planned_bps": 40e6, "lane_files": 2}
    files = [_span(0, 5, 10**7), _span(1, 8, 10**7)]
    m = record_lane_measurement(job_id="j5", metadata=planned, files=files, succeeded=True)
    assert m is not None and m.copy_dead_s == pytest.approx(2.0)
    # A copy faster than its share (the lane had room) counts as no dead time, not less than none.
    quick = record_lane_measurement(job_id="j6", metadata=planned, files=[_span(0, 2, 10**7)], succeeded=True)
    assert quick is not None and quick.copy_dead_s == 0.0
    # FTS3's own duration is the copy's time where it reports one (its times are whole seconds).
    timed = record_lane_measurement(
        job_id="j7", metadata=planned, files=[_span(0, 9, 10**7, duration=4.5)], succeeded=True
    )
    assert timed is not None and timed.copy_dead_s == pytest.approx(0.5)


@pytest.mark.parametrize(
    "extra",
    [
        {},  # a job the plan gave no rate
        {"planned_bps": "fast", "lane_files": 2},
        {"planned_bps": float("nan"), "lane_files": 2},
        {"planned_bps": -1.0, "lane_files": 2},
        {"planned_bps": 4e7, "lane_files": "two"},
        {"planned_bps": 4e7, "lane_files": 0},
    ],
)
def test_no_dead_time_without_a_sound_planned_rate_and_copies(extra: dict) -> None:  # type: ignore[type-arg]
    m = record_lane_measurement(
        job_id="j8", metadata={**LANE, **extra}, files=[_span(0, 5, 10**7)], succeeded=True
    )
    assert m is not None and m.copy_dead_s is None and m.planned_bps is None
    assert m.throughput_bps == pytest.approx(10**7 * 8 / 5)  # the throughput is still measured


def test_a_job_is_measured_with_the_rate_the_plan_gave_it_and_handed_on_with_its_span() -> None:
    from schedulers.telescope_plans import _measurements

    # The lane planned at 90 Mbit/s over 3 copies in flight; this job ran 2 of them: 60 Mbit/s is its.
    planned = {**LANE, "planned_bps": 90e6, "lane_files": 3}
    m = record_lane_measurement(
        job_id="j9", metadata=planned, files=[_span(0, 8, 10**7), _span(2, 10, 10**7)], succeeded=True
    )
    assert m is not None and m.planned_bps == pytest.approx(60e6)
    (given,) = _measurements()
    # The planner judges the job against that rate (tuning.correction) and over the span it ran, which
    # ended as it was recorded (contention.mark_link_limited).
    assert given.paced_bps == pytest.approx(60e6)
    assert given.end_s == pytest.approx(m.created.timestamp())
    assert given.end_s - given.start_s == pytest.approx(10.0)  # type: ignore[operator]


def test_the_push_loop_hands_the_planner_its_measurements_oldest_first() -> None:
    # The tuning model takes a lane's last measurements as its newest (tuning.HISTORY, DEAD_HISTORY): the
    # loop must not hand them newest first, or the plan would follow the lane as it was long ago.
    from schedulers.telescope_plans import _measurements

    for i, dead in enumerate((30.0, 20.0, 1.0)):  # recorded in this order: 1.0 is the newest
        record_lane_measurement(
            job_id=f"order-{i}",
            metadata={**LANE, "planned_bps": 8e7, "lane_files": 1},
            files=[_span(0, 1 + dead, 10**7)],
            succeeded=True,
        )
    assert [m.copy_dead_s for m in _measurements()] == pytest.approx([30.0, 20.0, 1.0])


@pytest.mark.parametrize("submitter", ["in-process", "scheduler", "client"])
def test_only_the_push_loops_own_jobs_make_measurements(submitter: str, django_user_model) -> None:  # type: ignore[no-untyped-def]
    """A finished job with a lane in its metadata: measured when the push loop submitted it, in-process
    (no submitter) or through the REST API as the scheduler's service account (it may configure the
    service); not when another client of the FTS3 REST API did (any client may write a lane)."""
    from srcnet.roles import grant_configure_transfers, grant_submit_transfers
    from transfers.choices import FileState, JobState
    from transfers.models import TransferFile, TransferJob
    from transfers.signals import job_finished

    account = None
    if submitter != "in-process":
        account = django_user_model.objects.create_user(submitter, password=submitter)
        grant_submit_transfers(account)
        if submitter == "scheduler":
            grant_configure_transfers(account)
    through_rest = submitter == "client"
    job = TransferJob.objects.create(state=JobState.FINISHED, metadata=LANE, submitter=account)
    TransferFile.objects.create(
        job=job,
        file_index=0,
        source_surl="root://sdp/f",
        dest_surl="root://uk/f",
        filesize=10**9,
        state=FileState.FINISHED,
        transferred_bytes=10**9,
        start_time=T0,
        finish_time=T0 + dt.timedelta(seconds=10),
    )
    job_finished.send(sender=TransferJob, job=job)
    measured = PathMeasurement.objects.filter(job_id=str(job.job_id))
    assert measured.count() == (0 if through_rest else 1)
    if not through_rest:
        assert measured.get().throughput_bps == pytest.approx(8e8)
