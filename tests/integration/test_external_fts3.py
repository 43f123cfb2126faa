"""The platform pointed at an FTS3 it does not run (``SRCNET_TRANSFERTOOL=fts3``): its flows submit
through ``Fts3Transfertool``, and the periodic poll settles replicas and products from the endpoint's
answers.

No real FTS3 server can run here, so the "external" FTS3 is the embedded service's own FTS3 REST endpoint,
reached over HTTP exactly as a production FTS3 would be. What makes it external for the platform: the job
carries no replica id (the in-process ``job_finished`` signal has nothing to settle, and the test checks
that the replica is still COPYING after the job ended), and only ``poll_external_jobs`` settles it."""

from __future__ import annotations

import pytest

from identity.tokens import issue
from replicas.choices import ProductState, ReplicaState
from replicas.models import CopyRequest, Replica
from replicas.services import FileSpec, register_product
from schedulers.external import poll_external_jobs
from schedulers.models import ExternalJob
from schedulers.services import push_product
from schedulers.tasks import poll_external_jobs as poll_task
from schedulers.transfertools import FollowedFts3Transfertool, default_transfertool
from tests.conftest import _worker_busy, wait_until
from topology.models import StorageEndpoint
from transfers.choices import TERMINAL_JOB_STATES
from transfers.embedded_transfertool import EmbeddedTransfertool
from transfers.models import TransferJob

from .conftest import adler32_of, put_file, unique

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
MIB = 1024 * 1024


@pytest.fixture
def external_fts3(settings, live_server, scheduler_account):  # type: ignore[no-untyped-def]
    """The platform's transfertool set to "fts3", at the embedded service's REST endpoint over HTTP, with
    the scheduler's service account (it submits, and sets link limits through /config/links)."""
    token = issue(scheduler_account, name="test", scope="fts3")[1]
    url = f"{live_server.url}/fts3"
    settings.SRCNET_TRANSFERTOOL = {"KIND": "fts3", "FTS3_URL": url, "FTS3_TOKEN": token, "FTS3_CA": "0"}
    return url


def _job_ended_and_worker_idle(job_id: str) -> bool:
    job = TransferJob.objects.filter(job_id=job_id).first()
    # Idle: whatever the worker does after a job ends (the job_finished receivers) has run.
    return job is not None and job.state in TERMINAL_JOB_STATES and not _worker_busy()


def test_the_settings_choose_the_transfertool(settings, external_fts3):
    tool = default_transfertool()
    assert isinstance(tool, FollowedFts3Transfertool) and tool.settles_from == tool.endpoint == external_fts3
    settings.SRCNET_TRANSFERTOOL = {"KIND": "embedded"}
    assert isinstance(default_transfertool(), EmbeddedTransfertool)


def test_replicas_settle_by_polling_the_external_fts3(celery_worker, bound_topology, to_uksrc, external_fts3):
    sdp, uk = bound_topology["SKA1-LOW_SDP"], bound_topology["UKSRC_DISK"]
    good, bad = unique("ext-ok"), unique("ext-missing")
    checksum = put_file(sdp, f"ska/{good}/f.ms", 2 * MIB)
    products = {
        "good": register_product(
            scope="ska", name=good, telescope=to_uksrc, files=[FileSpec("f.ms", 2 * MIB, checksum)]
        ),
        # Registered but never written at the SDP: the copy fails at the source.
        "bad": register_product(
            scope="ska", name=bad, telescope=to_uksrc, files=[FileSpec("f.ms", MIB, "0cc737eb")]
        ),
    }
    # Pinned to AUSRC (as a re-route does), so that its lane is free while the first product's copy holds
    # SKA1-Low -> UKSRC: a lane carries one product at a time until the poll settles it.
    Replica.objects.create(
        product=products["bad"],
        endpoint=StorageEndpoint.objects.get(name="AUSRC_DISK"),
        state=ReplicaState.PLANNED,
        reason="pinned by the test",
    )
    replicas = {k: push_product(product=p)[0] for k, p in products.items()}  # default_transfertool()
    rows = {k: ExternalJob.objects.get(job_id=r.copy_requests.get().job_id) for k, r in replicas.items()}
    for key, row in rows.items():
        assert row.endpoint == external_fts3 and row.settled is None
        job = TransferJob.objects.get(job_id=row.job_id)
        # Submitted through the REST endpoint with a token; the copy request, not the job, names the replica.
        assert job.metadata["auth_method"] == "oauth2" and "replica_id" not in job.metadata
        assert job.metadata["product"] == products[key].did
        wait_until(lambda j=row.job_id: _job_ended_and_worker_idle(j), timeout=180, what=f"job {row.job_id}")

    # The jobs are over at the "external" FTS3, and nothing has settled the replicas yet.
    for replica in replicas.values():
        replica.refresh_from_db()
        assert replica.state == ReplicaState.COPYING
    assert TransferJob.objects.get(job_id=rows["good"].job_id).state == "FINISHED"

    report = poll_external_jobs()  # builds its tool from the settings, as the beat task does
    assert sorted(report.settled) == sorted(r.job_id for r in rows.values()) and not report.errors
    good_replica, bad_replica = (replicas[k] for k in ("good", "bad"))
    good_replica.refresh_from_db()
    bad_replica.refresh_from_db()
    assert good_replica.state == ReplicaState.AVAILABLE
    assert good_replica.reason.endswith(f"transfer job {rows['good'].job_id} finished")
    assert adler32_of(uk.local_path(f"srcnet/ska/{good}/f.ms")) == checksum
    assert bad_replica.state == ReplicaState.FAILED
    assert f"transfer job {rows['bad'].job_id} FAILED" in bad_replica.reason
    assert "No such file or directory" in bad_replica.reason  # the reason the FTS3 gave, via the poll
    for key, state in (("good", ProductState.PLACED), ("bad", ProductState.FAILED)):
        products[key].refresh_from_db()
        assert products[key].state == state
        rows[key].refresh_from_db()
        assert rows[key].settled is not None

    # Idempotent: polling again (the beat task) settles nothing and changes nothing.
    before = {k: (r.state, r.reason, r.updated) for k, r in replicas.items()}
    assert poll_task() == 0
    for key, replica in replicas.items():
        replica.refresh_from_db()
        assert (replica.state, replica.reason, replica.updated) == before[key]


def test_an_unreachable_endpoint_is_reported_and_retried(settings, db):
    from schedulers.external import MAX_MISSES

    row = ExternalJob.objects.create(endpoint="http://127.0.0.1:9/fts3", job_id="x", metadata={})
    settings.SRCNET_TRANSFERTOOL = {
        "KIND": "fts3",
        "FTS3_URL": row.endpoint,
        "FTS3_TOKEN": "t",
        "FTS3_CA": "0",
    }
    report = poll_external_jobs()
    assert report.settled == [] and "cannot use the FTS3 endpoint" in report.errors[0]
    row.refresh_from_db()
    assert row.settled is None and row.misses == 0 and MAX_MISSES > 1


def test_the_poll_records_the_lane_measurement_of_a_loop_job(
    celery_worker, bound_topology, to_uksrc, external_fts3
):
    """The push loop's jobs at an external FTS3 feed the tuning history too: the poll reads the job's files
    (state, size, start and end) from the endpoint and records the lane's throughput, once."""
    from schedulers.loop import push_cycle
    from schedulers.models import PathMeasurement

    sdp = bound_topology["SKA1-LOW_SDP"]
    name = unique("ext-lane")
    checksum = put_file(sdp, f"ska/{name}/f.ms", 3 * MIB)
    product = register_product(
        scope="ska", name=name, telescope=to_uksrc, files=[FileSpec("f.ms", 3 * MIB, checksum)]
    )
    cycle = push_cycle()  # default_transfertool(): the external FTS3
    assert cycle.error == "" and [e["lane"] for e in cycle.submitted] == [["SKA1-Low", "UKSRC"]]
    row = ExternalJob.objects.get(job_id=cycle.submitted[0]["job_id"])
    assert row.metadata["lane"] == ["SKA1-Low", "UKSRC"]
    request = CopyRequest.objects.get(job_id=row.job_id)
    assert request.endpoint == external_fts3 and request.product.name == name and request.replica is not None
    wait_until(lambda: _job_ended_and_worker_idle(row.job_id), timeout=180, what=f"job {row.job_id}")
    # The embedded service behind the endpoint measured its own job through its in-process signal; a real
    # external FTS3 cannot, so that row goes and the poll must bring the measurement back.
    PathMeasurement.objects.filter(job_id=row.job_id).delete()
    report = poll_external_jobs()
    assert report.settled == [row.job_id] and report.measured == [row.job_id], report
    measurement = PathMeasurement.objects.get(job_id=row.job_id)
    job = TransferJob.objects.get(job_id=row.job_id)
    (copied,) = job.files.all()
    assert (measurement.source, measurement.destination) == ("SKA1-Low", "UKSRC")
    assert measurement.bytes == 3 * MIB and measurement.succeeded
    assert measurement.streams == cycle.submitted[0]["streams"]
    # FTS3 times are whole seconds, so the span is taken to the second, and never below the copy's own
    # tx_duration (a copy of 3 MiB on loopback can start and end in the same second).
    assert copied.start_time is not None and copied.finish_time is not None
    whole = [t.replace(microsecond=0) for t in (copied.start_time, copied.finish_time)]
    span = (whole[1] - whole[0]).total_seconds()
    assert measurement.seconds == pytest.approx(max(span, copied.duration_seconds or 0.0, 1e-3))
    assert measurement.throughput_bps == pytest.approx(3 * MIB * 8 / measurement.seconds)
    product.refresh_from_db()
    assert product.state == ProductState.PLACED
    # Once: a second poll neither settles nor measures again.
    again = poll_external_jobs()
    assert again.settled == [] and again.measured == []
    assert PathMeasurement.objects.filter(job_id=row.job_id).count() == 1
