"""/metrics of the control plane and of the FTS3 service: values read from the real database at scrape
time, request metrics of the FTS3 endpoints, and who may read them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client, override_settings
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from replicas.choices import ProductState
from replicas.models import CopyRequest
from schedulers.models import PushCycle
from tests.conftest import wait_until
from transfers.choices import FileState, JobState
from transfers.models import TransferJob

from ..factories import copy_request
from .data import GIB, copy, product

pytestmark = pytest.mark.django_db


def scrape(client: Client, path: str = "/metrics") -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of the exposition at ``path``, keyed by name and sorted labels."""
    response = client.get(path)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def test_state_metrics_follow_the_database(reference_topology) -> None:  # type: ignore[no-untyped-def]
    product("low-1", telescope="SKA1-Low", size=3 * GIB, state=ProductState.REGISTERED, deadline_in=1800)
    placing = product(
        "low-2", telescope="SKA1-Low", size=1 * GIB, state=ProductState.PLACING, deadline_in=600
    )
    placed = product("low-3", telescope="SKA1-Low", size=5 * GIB, state=ProductState.PLACED, deadline_in=-60)
    in_flight = TransferJob.objects.create(state=JobState.ACTIVE)
    copy_request(placing, job_id=str(in_flight.job_id), planned_bps=4e9, streams=8)
    # A client's job that says in its metadata what a push job would: the metrics do not take its word.
    TransferJob.objects.create(
        state=JobState.ACTIVE, metadata={"lane": ["SKA1-Low", "UKSRC"], "planned_bps": 1e12, "streams": 99}
    )
    now = timezone.now()
    for late in (30.0, 10.0):  # two push jobs that arrived 30 s and 10 s after the plan's prediction
        copy_request(
            placed,
            lane=("SKA1-Low", "AUSRC"),
            planned_bps=9e9,
            predicted_arrival=now - timedelta(seconds=late),
            state=JobState.FINISHED,
            settled=now,
        )
    copy(in_flight, 0, source="SKA1-LOW_SDP", destination="UKSRC_DISK", state=FileState.FINISHED, size=GIB)
    copy(in_flight, 1, source="SKA1-LOW_SDP", destination="UKSRC_DISK", state=FileState.FAILED, size=GIB)
    copy(in_flight, 2, source="SKA1-LOW_SDP", destination="UKSRC_DISK", state=FileState.ACTIVE, size=GIB)
    PushCycle.objects.create(duration_seconds=0.25)
    PushCycle.objects.create(duration_seconds=1.5, error="SKA1-Mid: no policy")

    with override_settings(SRCNET_METRICS={**_settings(), "RATE_WINDOW_SECONDS": 100.0}):
        samples = scrape(Client())

    low = (("link", "low-access"), ("telescope", "SKA1-Low"))
    mid = (("link", "mid-access"), ("telescope", "SKA1-Mid"))
    assert samples[("srcnet_state_collector_up", ())] == 1
    assert samples[("srcnet_access_link_capacity_bits_per_second", low)] == 100e9
    assert samples[("srcnet_access_link_target_bits_per_second", low)] == pytest.approx(1e15 * 8 / 86400)
    # Only the job in flight counts to the plan; the finished one's rate is history.
    assert samples[("srcnet_access_link_planned_bits_per_second", low)] == 4e9
    assert samples[("srcnet_access_link_planned_bits_per_second", mid)] == 0
    # One GiB finished within the 100 s window.
    assert samples[("srcnet_access_link_achieved_bits_per_second", low)] == pytest.approx(GIB * 8 / 100)
    assert samples[("srcnet_access_link_utilisation_ratio", low)] == pytest.approx(GIB * 8 / 100 / 100e9)
    tel = (("telescope", "SKA1-Low"),)
    assert samples[("srcnet_products_waiting", tel)] == 1
    assert samples[("srcnet_products_waiting_bytes", tel)] == 3 * GIB
    # Registered and placing products occupy the 2 PB buffer; the placed one does not.
    assert samples[("srcnet_sdp_buffer_occupancy_ratio", tel)] == pytest.approx(4 * GIB / 2e15)
    assert 590 < samples[("srcnet_deadline_slack_seconds", tel)] <= 600
    assert ("srcnet_deadline_slack_seconds", (("telescope", "SKA1-Mid"),)) not in samples
    assert samples[("srcnet_products_waiting", (("telescope", "SKA1-Mid"),))] == 0
    assert samples[("srcnet_transfers", (("activity", "push"), ("state", "ACTIVE")))] == 1
    assert samples[("srcnet_transfers", (("activity", "push"), ("state", "FAILED")))] == 1
    pair = (("destination_site", "UKSRC"), ("source_site", "SKA1-Low"))
    assert samples[("srcnet_transfer_outcomes_total", (*pair[:1], ("outcome", "failed"), *pair[1:]))] == 1
    assert samples[("srcnet_transfer_outcomes_total", (*pair[:1], ("outcome", "finished"), *pair[1:]))] == 1
    assert samples[("srcnet_bytes_moved_total", pair)] == GIB
    assert samples[("srcnet_push_cycles_total", ())] == 2
    assert samples[("srcnet_push_cycle_errors_total", ())] == 1
    assert samples[("srcnet_push_cycle_duration_seconds", ())] == 1.5
    to_uk = (("destination_site", "UKSRC"), ("source_site", "SKA1-Low"))
    to_au = (("destination_site", "AUSRC"), ("source_site", "SKA1-Low"))
    assert samples[("srcnet_lane_push_jobs", to_uk)] == 1
    assert samples[("srcnet_lane_planned_streams", to_uk)] == 8
    assert samples[("srcnet_lane_planned_bits_per_second", to_uk)] == 4e9
    assert ("srcnet_lane_push_jobs", to_au) not in samples  # finished: not in flight
    assert samples[("srcnet_push_arrivals", to_au)] == 2
    assert samples[("srcnet_push_arrival_delay_seconds", to_au)] == pytest.approx(20.0)
    assert samples[("srcnet_push_arrival_delay_max_seconds", to_au)] == pytest.approx(30.0)
    # The active copy loads the path SKA1-Low -> UKSRC.
    active = {k: v for k, v in samples.items() if k[0] == "srcnet_path_active_transfers"}
    assert list(active.values()) == [1]
    assert "UKSRC" in dict(next(iter(active))[1])["path"]


def test_on_a_scaled_network_links_and_buffers_are_in_the_wires_units(reference_topology, settings) -> None:  # type: ignore[no-untyped-def]
    """SRCNET_NETWORK_SCALE (the long-haul local network): capacity, target and SDP buffer divided as the
    push loop's plan is, so planned, achieved and target compare and the alerts mean the same."""
    settings.SRCNET_NETWORK_SCALE = 1000.0
    product("low-1", telescope="SKA1-Low", size=GIB, state=ProductState.REGISTERED, deadline_in=1800)
    with override_settings(SRCNET_METRICS=_settings()):
        samples = scrape(Client())
    low = (("link", "low-access"), ("telescope", "SKA1-Low"))
    assert samples[("srcnet_access_link_capacity_bits_per_second", low)] == 100e6
    one_pb_a_day_scaled = 1e15 * 8 / 86400 / 1000
    assert samples[("srcnet_access_link_target_bits_per_second", low)] == pytest.approx(one_pb_a_day_scaled)
    tel = (("telescope", "SKA1-Low"),)
    assert samples[("srcnet_sdp_buffer_occupancy_ratio", tel)] == pytest.approx(GIB / 2e12)


def test_tasks_waiting_for_a_worker_are_counted(db) -> None:  # type: ignore[no-untyped-def]
    """A task message no worker takes stays in the platform's queue on the real Redis, and is counted."""
    from django.conf import settings

    from srcnet.celery import app

    # A queue of this test's own: a worker of the session (tests/conftest.py) listens on the default one.
    queue = f"{settings.CELERY_TASK_DEFAULT_QUEUE}-unserved"
    with app.connection_for_write() as connection, override_settings(CELERY_TASK_DEFAULT_QUEUE=queue):
        client = connection.default_channel.client
        client.delete(queue)
        try:
            assert scrape(Client())[("srcnet_celery_queued_tasks", ())] == 0
            app.send_task("monitoring.tests.nobody-runs-this", queue=queue)
            assert scrape(Client())[("srcnet_celery_queued_tasks", ())] == 1
        finally:
            client.delete(queue)


def test_live_workers_are_counted(db, celery_worker) -> None:  # type: ignore[no-untyped-def]
    """The real Celery worker answers the scrape's ping."""
    assert scrape(Client())[("srcnet_celery_workers_up", ())] >= 1


def test_the_workers_task_runs_are_counted_and_timed(db, celery_worker) -> None:  # type: ignore[no-untyped-def]
    """The real worker (a prefork pool) runs real tasks; what each run recorded on Redis is on /metrics:
    started, ended by outcome (succeeded, failed, retried) and the run time's histogram."""
    from srcnet.celery import app

    def task_samples() -> dict:  # type: ignore[type-arg]
        return {k: v for k, v in scrape(Client()).items() if k[0].startswith("srcnet_celery_task")}

    def value(samples: dict, name: str, **labels: str) -> float:  # type: ignore[type-arg]
        return float(samples.get((name, tuple(sorted(labels.items()))), 0.0))

    before = task_samples()
    canary, optimize = "monitoring.canary", "transfers.optimize"
    app.send_task(canary, kwargs={"seconds": 0.7})
    app.send_task(canary, kwargs={"outcome": "failed"})
    app.send_task(canary, kwargs={"outcome": "retried"})  # one retry, which then succeeds
    app.send_task(optimize)  # a platform task, as the beat sends it
    app.send_task(optimize, args=["unexpected"])  # a malformed message: the run fails (TypeError)

    def all_ended() -> dict | None:  # type: ignore[type-arg]
        now = task_samples()
        runs = "srcnet_celery_task_runs_total"
        ended = (
            value(now, runs, task=canary, outcome="succeeded")
            - value(before, runs, task=canary, outcome="succeeded")
            == 2
            and value(now, runs, task=canary, outcome="failed")
            - value(before, runs, task=canary, outcome="failed")
            == 1
            and value(now, runs, task=optimize, outcome="failed")
            - value(before, runs, task=optimize, outcome="failed")
            == 1
            and value(now, runs, task=optimize, outcome="succeeded")
            - value(before, runs, task=optimize, outcome="succeeded")
            >= 1
        )
        return now if ended else None

    after = wait_until(all_ended, timeout=60, what="the worker to run the five tasks")

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("srcnet_celery_task_runs_total", task=canary, outcome="retried") == 1
    # Four runs of the canary started: the slow one, the failing one, the retried one and its retry.
    assert delta("srcnet_celery_tasks_started_total", task=canary) == 4
    assert delta("srcnet_celery_tasks_started_total", task=optimize) >= 2
    hist = "srcnet_celery_task_duration_seconds"
    ok = {"task": canary, "outcome": "succeeded"}
    assert delta(f"{hist}_count", **ok) == 2
    # The slow run slept 0.7 s: it is above the 0.5 s bucket and within the 1 s one, the retry's run is not.
    assert delta(f"{hist}_sum", **ok) >= 0.7
    assert delta(f"{hist}_bucket", **ok, le="0.5") == 1
    assert delta(f"{hist}_bucket", **ok, le="1.0") == 2
    assert delta(f"{hist}_bucket", **ok, le="+Inf") == 2
    assert delta(f"{hist}_count", task=canary, outcome="failed") == 1


def _settings() -> dict:  # type: ignore[type-arg]
    from django.conf import settings

    return dict(settings.SRCNET_METRICS)


def test_fts3_requests_are_counted_by_endpoint_and_status(db) -> None:  # type: ignore[no-untyped-def]
    client = Client()
    before = scrape(client)
    key = ("srcnet_fts3_requests_total", (("endpoint", "whoami"), ("method", "GET"), ("status", "401")))
    client.get("/fts3/whoami")  # no credentials: refused, and counted as such
    client.get("/fts3/whoami")
    after = scrape(client)
    assert after[key] - before.get(key, 0) == 2
    count = ("srcnet_fts3_request_duration_seconds_count", (("endpoint", "whoami"), ("method", "GET")))
    assert after[count] - before.get(count, 0) == 2
    # Requests to other views are not FTS3 requests.
    assert not any(k[0] == "srcnet_fts3_requests_total" and dict(k[1])["endpoint"] == "home" for k in after)


@override_settings(ROOT_URLCONF="srcnet.fts3_urls")
def test_the_fts3_service_exports_its_requests_without_the_platform_state(db) -> None:  # type: ignore[no-untyped-def]
    client = Client()
    client.get("/whoami")
    samples = scrape(client)
    assert any(k[0] == "srcnet_fts3_requests_total" and dict(k[1])["endpoint"] == "whoami" for k in samples)
    assert not any(k[0].startswith("srcnet_access_link") for k in samples)


def test_metrics_answer_loopback_only_without_a_token(db) -> None:  # type: ignore[no-untyped-def]
    assert Client(REMOTE_ADDR="127.0.0.1").get("/metrics").status_code == 200
    assert Client(REMOTE_ADDR="192.0.2.7").get("/metrics").status_code == 403
    with override_settings(SRCNET_METRICS={**_settings(), "ALLOWED_NETWORKS": ["192.0.2.0/24"]}):
        assert Client(REMOTE_ADDR="192.0.2.7").get("/metrics").status_code == 200
        assert Client(REMOTE_ADDR="127.0.0.1").get("/metrics").status_code == 403


def test_metrics_need_the_bearer_token_when_one_is_set(db) -> None:  # type: ignore[no-untyped-def]
    with override_settings(SRCNET_METRICS={**_settings(), "TOKEN": "s3cret"}):
        missing = Client().get("/metrics")
        assert missing.status_code == 401 and missing["WWW-Authenticate"] == "Bearer"
        assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
        # With a token, the network does not matter.
        good = Client(REMOTE_ADDR="192.0.2.7").get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret")
        assert good.status_code == 200 and b"srcnet_products_waiting" in good.content


def test_a_scrape_costs_the_same_queries_however_many_rows(reference_topology) -> None:  # type: ignore[no-untyped-def]
    """The scrape's cost does not grow with the products and copies on record (no query per row)."""
    from django.db import connection, reset_queries
    from django.test.utils import CaptureQueriesContext

    def scrape_queries() -> int:
        reset_queries()  # the log keeps 9000 queries at most: a full one would count none
        with CaptureQueriesContext(connection) as queries:
            scrape(Client())
        return len(queries)

    def add_rows(start: int, count: int) -> None:
        job = TransferJob.objects.create(state=JobState.ACTIVE)
        for n in range(start, start + count):
            for telescope in ("SKA1-Low", "SKA1-Mid"):
                made = product(
                    f"{telescope}-{n}",
                    telescope=telescope,
                    size=GIB,
                    state=ProductState.REGISTERED,
                    deadline_in=n,
                )
                copy_request(
                    made, lane=(telescope, "ZASRC"), job_id=str(job.job_id), planned_bps=1e9, streams=2
                )
                copy_request(
                    made,
                    lane=(telescope, "UKSRC"),
                    planned_bps=1e9,
                    predicted_arrival=timezone.now(),
                    state=JobState.FINISHED,
                    settled=timezone.now(),
                )
            for destination, state in (("UKSRC_DISK", FileState.FINISHED), ("AUSRC_DISK", FileState.ACTIVE)):
                copy(
                    job,
                    n * 2 + len(destination),
                    source="SKA1-MID_SDP",
                    destination=destination,
                    state=state,
                    size=GIB,
                )

    add_rows(0, 1)
    few = scrape_queries()
    add_rows(1, 30)
    assert scrape_queries() == few
    assert 10 < few < 40


def test_a_real_push_cycle_records_what_the_metrics_read(reference_topology) -> None:  # type: ignore[no-untyped-def]
    """The push loop records the plan's rate and predicted arrival of each job it submits (its copy request),
    and its own duration: the planned bit/s of the access link and the cycle's duration come from there."""
    from schedulers.loop import push_cycle

    product("waits", telescope="SKA1-Low", size=GIB, state=ProductState.REGISTERED, deadline_in=None)
    before = timezone.now().timestamp()
    cycle = push_cycle()
    assert not cycle.error, cycle.error
    assert cycle.legs_submitted == 1 and cycle.duration_seconds is not None and cycle.duration_seconds > 0
    job = TransferJob.objects.get()
    request = CopyRequest.objects.get(job_id=str(job.job_id))
    assert request.source_site == "SKA1-Low" and request.planned_bps and request.planned_bps > 0
    assert request.predicted_arrival is not None and request.predicted_arrival.timestamp() > before
    samples = scrape(Client())
    low = (("link", "low-access"), ("telescope", "SKA1-Low"))
    assert samples[("srcnet_access_link_planned_bits_per_second", low)] == request.planned_bps
    assert samples[("srcnet_push_cycle_duration_seconds", ())] == cycle.duration_seconds
    assert samples[("srcnet_products_waiting", (("telescope", "SKA1-Low"),))] == 0  # handed on
