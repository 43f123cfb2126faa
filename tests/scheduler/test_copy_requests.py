"""A replica's copy request links it to the transfer job that carries it (issue 34, item 2): the push loop
writes one with the plan it gave the job; the job's end settles the replica through it, once, by whichever
route reports the end; a job no request names settles nothing, whatever its metadata says; the API and the
portal show the requests; the upgrade turns the old jobs' metadata into requests."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest
from django.apps.registry import Apps
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.urls import reverse

from replicas.choices import ProductState, ReplicaState
from replicas.models import CopyRequest, Replica
from replicas.services import record_job_end
from schedulers.lane_health import unavailable_lanes
from schedulers.loop import push_cycle
from schedulers.snapshot import topology_snapshot
from tests.factories import product_at_sdp, settle_copy
from transfers.choices import JobState
from transfers.models import TransferJob
from transfers.signals import job_finished

from .test_policy_execution import RecordingTool, _only_uk

STALLED = "TRANSFER stalled: no progress at the destination for 12 s, cancelled"


def _replicas_back_at(migration: str) -> Apps:
    """The replicas app migrated back to ``migration`` (every other app at its latest); the models as they
    were then."""
    executor = MigrationExecutor(connection)
    graph = executor.loader.graph
    (latest,) = [leaf for leaf in graph.leaf_nodes() if leaf[0] == "replicas"]
    later = {n for n in graph.forwards_plan(latest) if n[0] == "replicas"} - set(
        graph.forwards_plan(("replicas", migration))
    )
    before = [("replicas", migration)]
    # Every other app at its latest migration that does not need a later one of replicas (an app made since,
    # e.g. consistency, goes back with it).
    for leaf in graph.leaf_nodes():
        node = None if leaf[0] == "replicas" else leaf
        while node is not None and later & set(graph.forwards_plan(node)):
            parents = [parent for parent in graph.node_map[node].parents if parent.key[0] == node[0]]
            node = parents[0].key if parents else None
        if node is not None:
            before.append(node)
    executor.migrate(before[:1])
    return executor.loader.project_state(before).apps


def _migrate_to_the_latest() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


def _pushed(name: str = "obs") -> tuple[Replica, RecordingTool, dict]:  # type: ignore[type-arg]
    _only_uk()
    product, tool = product_at_sdp(name, sizes=[10**6, 10**6]), RecordingTool()
    cycle = push_cycle(transfertool=tool)
    assert cycle.error == "" and len(cycle.submitted) == 1
    return product.replicas.get(endpoint__name="UKSRC_DISK"), tool, cycle.submitted[0]


@pytest.mark.django_db
def test_the_push_loop_links_each_copy_to_its_job_with_the_plan_it_gave_it(reference_topology) -> None:  # type: ignore[no-untyped-def]
    replica, tool, entry = _pushed()
    request = replica.copy_requests.get()
    _, params = tool.jobs[entry["job_id"]]
    assert request.job_id == entry["job_id"] and request.endpoint == ""  # the platform's own service
    assert (request.source_site, request.destination_site, request.via_site) == ("SKA1-Low", "UKSRC", "")
    assert request.streams == entry["streams"] and request.streams_per_file == params.streams
    assert request.planned_bps == params.metadata["planned_bps"] > 0
    assert request.predicted_arrival is not None
    assert request.predicted_arrival.timestamp() == pytest.approx(params.metadata["predicted_arrival"])
    assert request.state == JobState.SUBMITTED and request.settled is None
    # The job itself carries no replica: nothing reads one from a job's metadata.
    assert "replica_id" not in params.metadata


@pytest.mark.django_db
def test_a_jobs_end_settles_its_replica_once_and_keeps_the_outcome(reference_topology) -> None:  # type: ignore[no-untyped-def]
    replica, _, entry = _pushed()
    assert [r.pk for r in settle_copy(replica, "FINISHED")] == [replica.pk]
    replica.refresh_from_db()
    request = replica.copy_requests.get()
    assert replica.state == ReplicaState.AVAILABLE
    assert replica.reason.endswith(f"transfer job {entry['job_id']} finished")
    assert request.state == JobState.FINISHED and request.settled is not None and not request.source_problem
    # The same end reported again (the poll after the signal, a repeated signal) changes nothing.
    reason, settled = replica.reason, request.settled
    assert record_job_end(endpoint="", job_id=entry["job_id"], state="FAILED", reasons=["late"]) == []
    replica.refresh_from_db()
    request.refresh_from_db()
    assert (replica.state, replica.reason, request.state, request.settled) == (
        ReplicaState.AVAILABLE,
        reason,
        JobState.FINISHED,
        settled,
    )


@pytest.mark.django_db
def test_a_failure_keeps_its_reasons_and_whether_the_source_was_to_blame(reference_topology) -> None:  # type: ignore[no-untyped-def]
    replica, _, _ = _pushed()
    settle_copy(
        replica, "FAILED", ["SOURCE [2 No such file or directory]", "SOURCE [2 No such file or directory]"]
    )
    request = replica.copy_requests.get()
    assert request.state == JobState.FAILED and request.source_problem
    assert request.reasons == ["SOURCE [2 No such file or directory]"]
    # A source problem says nothing of the lane: it stays available.
    assert ("SKA1-Low", "UKSRC") not in unavailable_lanes(topology=topology_snapshot())


@pytest.mark.django_db
def test_a_path_failure_takes_its_lane_out_naming_the_job(reference_topology) -> None:  # type: ignore[no-untyped-def]
    replica, _, entry = _pushed()
    settle_copy(replica, "FAILED", [STALLED])
    request = replica.copy_requests.get()
    assert request.state == JobState.FAILED and not request.source_problem
    outage = unavailable_lanes(topology=topology_snapshot())[("SKA1-Low", "UKSRC")]
    assert f"transfer job {entry['job_id']} FAILED: {STALLED}" in outage.reason
    assert outage.since == request.settled


@pytest.mark.django_db
def test_a_job_no_request_names_settles_nothing_whatever_its_metadata_says(reference_topology) -> None:  # type: ignore[no-untyped-def]
    """Any client of the FTS3 endpoint writes what it likes into its job's metadata; a job naming a replica
    there used to settle it. Now only the loop's own request links a job to a replica."""
    replica, _, entry = _pushed()
    forged = TransferJob.objects.create(
        state="FINISHED", metadata={"replica_id": replica.pk, "lane": ["a", "b"]}
    )
    job_finished.send(sender=TransferJob, job=forged)
    replica.refresh_from_db()
    assert replica.state == ReplicaState.COPYING
    assert replica.copy_requests.get().settled is None
    # Nor does the same job id at another FTS3 endpoint than the one the request names.
    assert record_job_end(endpoint="https://other-fts3:8446", job_id=entry["job_id"], state="FINISHED") == []
    replica.refresh_from_db()
    assert replica.state == ReplicaState.COPYING and replica.product.state == ProductState.PLACING


@pytest.mark.django_db
def test_a_job_that_ended_before_its_request_was_written_settles_next_cycle(reference_topology) -> None:  # type: ignore[no-untyped-def]
    """A client submitting over HTTP writes the request after the service answered: a job that ended
    before that commit found no request, and only the push cycle's sweep (schedulers/missed_ends.py)
    settles its replica."""
    replica, tool, entry = _pushed()
    other, _, other_entry = _pushed("obs-2")
    # The service's record of the job, ended with its signal heard by nobody (no request named it yet)...
    TransferJob.objects.create(job_id=uuid.UUID(entry["job_id"]), state=JobState.FINISHED)
    # ...and another job of the service, still running: not the sweep's business.
    TransferJob.objects.create(job_id=uuid.UUID(other_entry["job_id"]), state=JobState.ACTIVE)
    replica.refresh_from_db()
    assert replica.state == ReplicaState.COPYING
    cycle = push_cycle(transfertool=tool)
    replica.refresh_from_db()
    other.refresh_from_db()
    assert replica.state == ReplicaState.AVAILABLE
    assert replica.copy_requests.get().state == JobState.FINISHED
    assert other.state == ReplicaState.COPYING and other.copy_requests.get().settled is None
    assert {"time_s": 0.0, "telescope": "", "kind": "missed_end", "detail": f"job {entry['job_id']}"} in (
        cycle.events
    )
    # The next cycle finds nothing more to settle.
    assert not [e for e in push_cycle(transfertool=tool).events if e["kind"] == "missed_end"]


@pytest.mark.django_db
def test_the_api_and_the_portal_show_a_replicas_copy_requests(  # type: ignore[no-untyped-def]
    reference_topology, operator, operator_client, client
) -> None:
    replica, _, entry = _pushed()
    settle_copy(replica, "FAILED", [STALLED])
    api = operator_client
    body = api.get(f"/api/replicas/replicas/{replica.pk}/").json()
    [shown] = body["copy_requests"]
    assert shown["job_id"] == entry["job_id"] and shown["lane"] == ["SKA1-Low", "UKSRC"]
    assert shown["state"] == "FAILED" and shown["reasons"] == [STALLED] and shown["source_problem"] is False
    assert shown["streams"] == entry["streams"] and shown["settled"] is not None
    product = api.get(f"/api/replicas/products/{replica.product_id}/").json()
    nested = next(r for r in product["replicas"] if r["id"] == replica.pk)
    assert nested["copy_requests"] == body["copy_requests"]
    client.force_login(operator)
    page = client.get(reverse("replicas:product", args=[replica.product_id])).content.decode()
    assert f'data-job="{entry["job_id"]}"' in page and "SKA1-Low → UKSRC" in page and STALLED in page


@pytest.mark.django_db(transaction=True)
def test_the_upgrade_turns_the_old_jobs_metadata_into_copy_requests(reference_topology) -> None:  # type: ignore[no-untyped-def]
    """A copy in flight across the upgrade is still settled when its job ends, and a settled one keeps lane
    health's history: migration 0009 reads the ``replica_id`` the jobs carried, once."""
    product = product_at_sdp("upgraded", sizes=[10**6])  # with today's models, before going back
    old = _replicas_back_at("0008_copy_request")
    Replica_, TransferJob_, TransferFile_, ExternalJob_ = (
        old.get_model(name)
        for name in (
            "replicas.Replica",
            "transfers.TransferJob",
            "transfers.TransferFile",
            "schedulers.ExternalJob",
        )
    )
    endpoints = {
        name: pk
        for pk, name in old.get_model("topology", "StorageEndpoint").objects.values_list("pk", "name")
    }
    moving = Replica_.objects.create(
        product_id=product.pk, endpoint_id=endpoints["UKSRC_DISK"], state="copying"
    )
    failed = Replica_.objects.create(
        product_id=product.pk, endpoint_id=endpoints["AUSRC_DISK"], state="failed"
    )
    followed = Replica_.objects.create(
        product_id=product.pk, endpoint_id=endpoints["FRSRC_DISK"], state="copying"
    )
    arrival = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.UTC)
    plan = {"lane": ["SKA1-Low", "UKSRC"], "planned_bps": 4e8, "streams": 6, "streams_per_file": 3}
    in_flight = TransferJob_.objects.create(
        state="ACTIVE", metadata={**plan, "replica_id": moving.pk, "predicted_arrival": arrival.timestamp()}
    )
    ended = TransferJob_.objects.create(
        state="FAILED",
        finished=arrival,
        metadata={**plan, "lane": ["SKA1-Low", "AUSRC"], "replica_id": failed.pk},
    )
    TransferFile_.objects.create(
        job=ended, file_index=0, source_surl="root://a/x", dest_surl="root://b/x", reason=STALLED
    )
    ExternalJob_.objects.create(
        endpoint="https://fts3.example:8446", job_id="ext-1", metadata={**plan, "replica_id": followed.pk}
    )
    TransferJob_.objects.create(
        state="ACTIVE", metadata={"replica_id": 10**9}
    )  # a replica that no longer exists
    _migrate_to_the_latest()

    requests = {r.replica_id: r for r in CopyRequest.objects.all()}
    assert set(requests) == {moving.pk, failed.pk, followed.pk}
    now = requests[moving.pk]
    assert (now.endpoint, now.job_id, now.state, now.settled) == (
        "",
        str(in_flight.job_id),
        "SUBMITTED",
        None,
    )
    assert (now.source_site, now.destination_site, now.planned_bps, now.streams) == (
        "SKA1-Low",
        "UKSRC",
        4e8,
        6,
    )
    assert now.predicted_arrival == arrival
    past = requests[failed.pk]
    assert (past.state, past.settled, past.reasons, past.source_problem) == (
        "FAILED",
        arrival,
        [STALLED],
        False,
    )
    assert (requests[followed.pk].endpoint, requests[followed.pk].job_id) == (
        "https://fts3.example:8446",
        "ext-1",
    )
    # And the job in flight settles its replica when it ends.
    assert [r.pk for r in record_job_end(endpoint="", job_id=str(in_flight.job_id), state="FINISHED")] == [
        moving.pk
    ]


@pytest.mark.django_db(transaction=True)
def test_the_upgrade_reads_rucio_rules_out_of_the_old_reasons_once(reference_topology) -> None:  # type: ignore[no-untyped-def]
    """Rucio mode's replicas name their rule in a field now (the loop and the rules page no longer search
    the reason for it): migration 0010 reads it from the reasons Rucio mode wrote, with the push loop's
    placement that the reason kept in front."""
    product = product_at_sdp("ruled", sizes=[10**6])
    old = _replicas_back_at("0009_copy_requests_from_job_metadata")
    Replica_ = old.get_model("replicas", "Replica")
    endpoints = dict(old.get_model("topology", "StorageEndpoint").objects.values_list("name", "pk"))
    rule, other = "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"
    placed = "low-share (weighted_share): first copy; push plan: SKA1-Low -> UKSRC at 400 Mbit/s"
    rows = {
        "UKSRC_DISK": f"{placed}; rucio rule {rule} (SKA Data Products, UKSRC_DISK): REPLICATING",
        "AUSRC_DISK": f"rucio rule {other} created by account alice outside the platform (User, AUSRC_DISK)",
        "FRSRC_DISK": f"{placed}; transfer job 1d2e finished",
    }
    for name, reason in rows.items():
        Replica_.objects.create(
            product_id=product.pk, endpoint_id=endpoints[name], state="copying", reason=reason
        )
    _migrate_to_the_latest()
    found = {r.endpoint.name: (r.rucio_rule, r.placement) for r in Replica.objects.filter(product=product)}
    assert found["UKSRC_DISK"] == (rule, placed)
    assert found["AUSRC_DISK"] == (other, "")
    assert found["FRSRC_DISK"] == ("", "")
