"""FTS3 jobs that Rucio's conveyor submits for the push loop's rules count in the metrics as the push loop's
own jobs do: they are the same transfer rows (paths, sites, transfers by state), and their plan (kept by
the push loop in ``schedulers.PlannedRule``, as ``leg_submission`` writes it in Rucio mode) gives the access
link's and the lane's planned rate, streams and arrival delay. The jobs go in through the FTS3 REST endpoint
with the body Rucio 41 sends (one job per file: the conveyor's default ``group_bulk`` of 1); no Rucio server
is needed. A rule the push loop did not make (a scientist's) has no plan: its copies load the path, not the
plan."""

from __future__ import annotations

import copy as deep
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client, override_settings
from django.utils import timezone

from identity.tokens import issue
from replicas.choices import ProductState
from schedulers.models import PlannedRule
from topology.models import StorageEndpoint
from transfers.choices import FileState, JobState
from transfers.models import TransferJob

from ..fts3.recorded import RUCIO_SUBMISSION
from .data import GIB, product
from .test_metrics import _settings, scrape

pytestmark = pytest.mark.django_db

WINDOW = 100.0
LOW = (("link", "low-access"), ("telescope", "SKA1-Low"))
LANE = (("destination_site", "UKSRC"), ("source_site", "SKA1-Low"))


def rucio_job(client: Client, *, scope: str, dataset: str, file: str, size: int) -> TransferJob:
    """One file's job from SKA1-Low's SDP to UKSRC_DISK, as Rucio's conveyor submits it (root:// URLs with
    the double slash, the file's DID ``<dataset>/<file>`` in the file metadata)."""
    sdp, uk = (StorageEndpoint.objects.get(name=n) for n in ("SKA1-LOW_SDP", "UKSRC_DISK"))
    path = f"srcnet/{scope}/{dataset}/{file}"  # the RSE prefix, then the DID as the identity lfn2pfn has it
    payload: dict[str, Any] = deep.deepcopy(RUCIO_SUBMISSION)
    entry = payload["files"][0]
    entry["sources"] = [f"root://{sdp.hostname}:{sdp.root_port}//{path}"]
    entry["destinations"] = [f"root://{uk.hostname}:{uk.root_port}//{path}"]
    entry["filesize"] = size
    entry["activity"] = "SKA Data Products"
    entry["metadata"].update(
        request_id=uuid.uuid4().hex,
        scope=scope,
        name=f"{dataset}/{file}",
        activity="SKA Data Products",
        src_rse="SKA1-LOW_SDP",
        dst_rse="UKSRC_DISK",
        filesize=size,
    )
    answer = client.post("/fts3//jobs", payload, content_type="application/json")
    assert answer.status_code == 200, answer.content
    return TransferJob.objects.get(job_id=answer.json()["job_id"])


def finish(job: TransferJob, size: int) -> None:
    """What the transfer service's executor records when a job's only copy ends well."""
    now = timezone.now()
    job.files.update(
        state=FileState.FINISHED, transferred_bytes=size, start_time=now, finish_time=now, duration_seconds=1
    )
    job.state, job.finished = JobState.FINISHED, now
    job.save(update_fields=["state", "finished"])


def metrics() -> dict:  # type: ignore[type-arg]
    with override_settings(SRCNET_METRICS={**_settings(), "RATE_WINDOW_SECONDS": WINDOW}):
        return scrape(Client())


def test_the_conveyors_jobs_count_with_their_plan(reference_topology, operator) -> None:  # type: ignore[no-untyped-def]
    token = issue(operator, name="test", scope="fts3")[1]
    fts = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    planned = product("obs-7", telescope="SKA1-Low", size=GIB, state=ProductState.PLACING, deadline_in=None)
    unplanned = product("sci-1", telescope="SKA1-Low", size=GIB, state=ProductState.PLACED, deadline_in=None)
    predicted = timezone.now() + timedelta(seconds=30)
    PlannedRule.objects.create(
        rule_id="3f1c0ffee",
        product=planned,
        rse="UKSRC_DISK",
        source_site="SKA1-Low",
        destination_site="UKSRC",
        planned_bps=3e9,
        streams=4,
        predicted_arrival=predicted.timestamp(),
    )
    # The planned product's two files (one job each) and a scientist's rule's file, all queued.
    first, second = (
        rucio_job(fts, scope=planned.scope, dataset=planned.name, file=name, size=GIB)
        for name in ("a.ms", "b.ms")
    )
    other = rucio_job(fts, scope=unplanned.scope, dataset=unplanned.name, file="x.ms", size=GIB)

    samples = metrics()
    # The rule counts once, with its plan's rate and streams, however many of its files' jobs wait.
    assert samples[("srcnet_access_link_planned_bits_per_second", LOW)] == 3e9
    assert samples[("srcnet_lane_push_jobs", LANE)] == 1
    assert samples[("srcnet_lane_planned_streams", LANE)] == 4
    assert samples[("srcnet_lane_planned_bits_per_second", LANE)] == 3e9
    # Every copy, planned or not, is on the path and in the transfers by state.
    queued = {k[1]: v for k, v in samples.items() if k[0] == "srcnet_path_queued_transfers"}
    assert list(queued.values()) == [3] and "UKSRC" in dict(next(iter(queued)))["path"]
    assert samples[("srcnet_transfers", (("activity", "SKA Data Products"), ("state", "SUBMITTED")))] == 3

    # One file copied: the other still moves, so the plan is still in flight and nothing has arrived.
    finish(first, GIB)
    TransferJob.objects.filter(pk=second.pk).update(state=JobState.ACTIVE)
    second.files.update(state=FileState.ACTIVE, start_time=timezone.now())
    samples = metrics()
    assert samples[("srcnet_access_link_planned_bits_per_second", LOW)] == 3e9
    assert samples[("srcnet_access_link_achieved_bits_per_second", LOW)] == pytest.approx(GIB * 8 / WINDOW)
    active = {k[1]: v for k, v in samples.items() if k[0] == "srcnet_path_active_transfers"}
    assert list(active.values()) == [1]
    assert ("srcnet_push_arrivals", LANE) not in samples

    # Both files copied: the product arrived, when its last file did; the plan is no longer in flight.
    finish(second, GIB)
    finish(other, GIB)
    samples = metrics()
    assert samples[("srcnet_access_link_planned_bits_per_second", LOW)] == 0
    assert ("srcnet_lane_push_jobs", LANE) not in samples
    assert samples[("srcnet_access_link_achieved_bits_per_second", LOW)] == pytest.approx(
        3 * GIB * 8 / WINDOW
    )
    assert samples[("srcnet_push_arrivals", LANE)] == 1  # the scientist's rule has no plan to arrive against
    second.refresh_from_db()
    assert second.finished is not None
    expected = second.finished.timestamp() - predicted.timestamp()
    assert samples[("srcnet_push_arrival_delay_seconds", LANE)] == pytest.approx(expected, abs=1e-3)
    pair = (("destination_site", "UKSRC"), ("source_site", "SKA1-Low"))
    assert samples[("srcnet_bytes_moved_total", pair)] == 3 * GIB


def test_the_plans_are_read_with_the_same_queries_however_many_rules(reference_topology, operator) -> None:  # type: ignore[no-untyped-def]
    """One rule with its jobs in flight, then twelve: the lanes are read with the same queries."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from monitoring.selectors import lanes_in_flight

    token = issue(operator, name="test", scope="fts3")[1]
    fts = Client(HTTP_AUTHORIZATION=f"Bearer {token}")

    def rules(numbers: range) -> None:
        for n in numbers:
            made = product(
                f"obs-{n}", telescope="SKA1-Low", size=GIB, state=ProductState.PLACING, deadline_in=None
            )
            PlannedRule.objects.create(
                rule_id=f"rule-{n}",
                product=made,
                rse="UKSRC_DISK",
                source_site="SKA1-Low",
                destination_site="UKSRC",
                planned_bps=1e9,
                streams=2,
            )
            for name in ("a.ms", "b.ms"):
                rucio_job(fts, scope=made.scope, dataset=made.name, file=name, size=GIB)

    def read() -> tuple[int, dict]:  # type: ignore[type-arg]
        with CaptureQueriesContext(connection) as queries:
            lanes = lanes_in_flight()
        return len(queries), lanes

    rules(range(1))
    few, lanes = read()
    assert lanes[("SKA1-Low", "UKSRC")].jobs == 1
    rules(range(1, 12))
    many, lanes = read()
    assert many == few
    assert lanes[("SKA1-Low", "UKSRC")].jobs == 12
    assert lanes[("SKA1-Low", "UKSRC")].planned_bps == 12e9
