"""End to end: Rucio rules carried out by Rucio's running daemons through the platform's FTS3 service.

Real pieces only: the Rucio server (gunicorn, PostgreSQL) and its daemons (conveyor submitter, poller,
finisher; judge evaluator, repairer) as long-running processes, the platform's FTS3 REST service over
HTTPS with the conveyor's client certificate, its Celery worker copying between real XRootD servers, and
the worker's beat following the rules into the platform's replicas. The tests make rules and wait.
"""

from __future__ import annotations

import pytest

from localnet.processes import read_pid
from localnet.scitags import ACTIVITIES, EXPERIMENT, REGISTRY
from replicas.choices import ProductState, ReplicaState
from replicas.models import PolicyShare, Replica, ReplicaPolicy
from srcnet.intervals import most_at_once
from topology.models import StorageEndpoint, Telescope

from ..conftest import wait_until
from ..integration.conftest import adler32_of, put_file
from ..integration.connections import ConnectionSampler
from ..integration.test_streams_on_the_wire import expected_connections
from .helpers import assert_copied_with_rucios_tokens, followed, product_on_disk, rule_diagnosis, rule_outcome

pytestmark = pytest.mark.integration


def test_rule_with_two_copies_goes_replicating_to_ok(
    rucio_sites, rucio, conveyor_cert, scope, rucio_token_client
):  # type: ignore[no-untyped-def]
    product = product_on_disk(rucio_sites, scope, {"a.ms": 256 * 1024, "b.ms": 64 * 1024})
    rucio.register_product(product)
    dests = list(StorageEndpoint.objects.filter(name__in=["UKSRC_DISK", "AUSRC_DISK"]))
    rule = rucio.place_product(product, dests, activity="SKA Data Products")
    assert rule.state == "REPLICATING" and rule.copies == 2
    assert rule_outcome(rucio, rule.rule_id, timeout=150) == "OK"
    followed(product, ProductState.PLACED)
    for dest in ("UKSRC_DISK", "AUSRC_DISK"):
        replica = Replica.objects.get(product=product, endpoint__name=dest)
        assert replica.state == ReplicaState.AVAILABLE, replica.reason
        assert rule.rule_id in replica.reason
        for f in product.files.all():
            copy = rucio_sites[dest].local_path(f"srcnet/{f.relative_path}")
            assert copy.stat().st_size == f.size_bytes
            assert adler32_of(copy) == f.adler32
    states = rucio.product_replicas(product)
    assert all(set(s.values()) == {"AVAILABLE"} and len(s) == 3 for s in states.values()), states
    assert_copied_with_rucios_tokens(scope, rucio_token_client, copies=4)


def test_missing_source_file_fails_the_request_with_its_reason(  # type: ignore[no-untyped-def]
    rucio_sites, rucio, conveyor_cert, scope
):
    product = product_on_disk(rucio_sites, scope, {"gone.ms": 4096}, missing=("gone.ms",))
    rucio.register_product(product)
    dest = StorageEndpoint.objects.get(name="UKSRC_DISK")
    rule = rucio.place_product(product, [dest])
    assert rule_outcome(rucio, rule.rule_id, timeout=200) == "STUCK"
    errors = rucio.transfer_errors(rule.rule_id)
    assert "SOURCE" in errors["UKSRC_DISK"], errors
    followed(product, ProductState.FAILED)
    replica = Replica.objects.get(product=product, endpoint=dest)
    assert replica.state == ReplicaState.FAILED and replica.rucio_rule == rule.rule_id
    # Rucio marks the lock STUCK before the rule itself: a round of the follower between the two recorded
    # the failed lock under the rule's REPLICATING (a run on 2026-11-29). The rule's change brings its product
    # into the next round, which says STUCK.
    wait_until(
        lambda: "STUCK" in Replica.objects.get(pk=replica.pk).reason,
        timeout=60,
        what="the follower's round after the rule went STUCK",
    )
    replica.refresh_from_db()
    assert rule.rule_id in replica.reason and replica.state == ReplicaState.FAILED
    # the FTS3 service's reason travels through Rucio's request into the replica's reason
    assert "TRANSFER_FAILED" in replica.reason and "No such file" in replica.reason, replica.reason
    assert not rucio_sites["UKSRC_DISK"].local_path(f"srcnet/{scope}/{product.name}/gone.ms").exists()
    states = rucio.product_replicas(product)
    assert all("UKSRC_DISK" not in s or s["UKSRC_DISK"] != "AVAILABLE" for s in states.values()), states


def test_a_file_attached_to_the_dataset_later_is_copied_by_the_same_rule(  # type: ignore[no-untyped-def]
    rucio_sites, rucio, conveyor_cert, scope, test_state
):
    """The judge-evaluator daemon applies a dataset's rule to a file attached after the rule went OK (a lock,
    a transfer request), and the conveyor daemons copy it: nobody runs anything by hand."""
    product = product_on_disk(rucio_sites, scope, {"first.ms": 64 * 1024})
    rucio.register_product(product)
    rule = rucio.place_product(product, [StorageEndpoint.objects.get(name="UKSRC_DISK")])
    assert rule_outcome(rucio, rule.rule_id, timeout=150) == "OK"

    # A late file of the observation: written at the SDP, registered there and attached by Rucio's client.
    relative, size = f"{scope}/{product.name}/late.ms", 48 * 1024
    adler = put_file(rucio_sites["SKA1-LOW_SDP"], relative, size)
    late = {"scope": scope, "name": f"{product.name}/late.ms", "bytes": size, "adler32": adler}
    rucio.client.add_files_to_dataset(scope, product.name, [late], rse="SKA1-LOW_SDP")

    def copied() -> bool:
        info = rucio.rule(rule.rule_id)
        return info.state == "OK" and info.locks.get("UKSRC_DISK") == ["OK", "OK"]

    try:
        wait_until(copied, timeout=150, interval=0.5, what="the late file's lock to be OK")
    except pytest.fail.Exception:
        files = [(scope, f"{product.name}/first.ms"), (scope, late["name"])]
        pytest.fail(rule_diagnosis(rucio, rule.rule_id, files, "UKSRC_DISK", test_state.path / "log"))
    copy = rucio_sites["UKSRC_DISK"].local_path(f"srcnet/{relative}")
    assert copy.stat().st_size == size and adler32_of(copy) == adler
    states = next(iter(rucio.client.list_replicas([{"scope": scope, "name": late["name"]}], all_states=True)))
    assert states["states"] == {"SKA1-LOW_SDP": "AVAILABLE", "UKSRC_DISK": "AVAILABLE"}, states


def _everything_to_uk(scope: str) -> ReplicaPolicy:
    """SKA1-Low's active policy: every first copy to UKSRC_DISK, one replica (no relay)."""
    telescope = Telescope.objects.get(name="SKA1-Low")
    ReplicaPolicy.objects.filter(telescope=telescope).update(is_active=False)
    policy = ReplicaPolicy.objects.create(name=f"low-to-uk-{scope}", telescope=telescope)
    PolicyShare.objects.create(
        policy=policy, destination=StorageEndpoint.objects.get(name="UKSRC_DISK"), weight=1
    )
    return policy


def test_the_push_loop_places_through_rucio_under_its_plan(  # type: ignore[no-untyped-def]
    rucio_sites, rucio, rucio_mode, conveyor_cert, scope, settings
):
    """Rucio mode goes through the push loop like every other path: the cycle plans the product, sets the
    lane's link limit on the FTS3 endpoint the RSEs name, and hands the leg on as a rule; Rucio's daemons
    copy it through that endpoint (so under that limit) and the follower settles the replica, which keeps
    the plan's reason in front of the rule's."""
    from monitoring.selectors import arrival_delays
    from schedulers.loop import push_cycle
    from schedulers.models import PlannedRule
    from schedulers.planning import PlanConfig
    from transfers.embedded_transfertool import EmbeddedTransfertool
    from transfers.models import TransferAttempt, TransferJob
    from transfers.scitags import flow_id

    settings.SRCNET_PUSH_THROUGH = "rucio"
    settings.SRCNET_SCITAGS = {"REGISTRY": str(REGISTRY), "EXPERIMENT": EXPERIMENT, "ACTIVITIES": ACTIVITIES}
    policy = _everything_to_uk(scope)
    product = product_on_disk(rucio_sites, scope, {"a.ms": 192 * 1024, "b.ms": 96 * 1024})
    tool = EmbeddedTransfertool()

    # One copy at a time on the lane: the link limit Rucio's jobs must obey at the FTS3 endpoint.
    cycle = push_cycle(transfertool=tool, config=PlanConfig(max_files=1))
    assert cycle.error == "" and len(cycle.submitted) == 1, cycle.error
    (entry,) = cycle.submitted
    assert entry["lane"] == ["SKA1-Low", "UKSRC"]
    rule = rucio.rule(entry["job_id"])  # the leg's handle is the rule
    assert rule.rse_expression == "UKSRC_DISK" and rule.activity == "SKA Data Products"
    replica = Replica.objects.get(product=product, endpoint__name="UKSRC_DISK")
    assert replica.policy == policy and "push plan: SKA1-Low -> UKSRC" in replica.reason
    # (the follower may already have added the rule's state after it)
    assert f"; rucio rule {rule.rule_id}" in replica.reason, replica.reason
    # The plan's figures, which the conveyor's FTS3 jobs do not carry, are kept for the metrics.
    plan = PlannedRule.objects.get(rule_id=rule.rule_id)
    assert (plan.source_site, plan.destination_site, plan.rse) == ("SKA1-Low", "UKSRC", "UKSRC_DISK")
    assert plan.product == product and plan.streams == entry["streams"] and plan.planned_bps > 0
    # The plan's concurrency is the link's, at the FTS3 endpoint the conveyor submits to.
    sdp, uk = (StorageEndpoint.objects.get(name=n) for n in ("SKA1-LOW_SDP", "UKSRC_DISK"))
    scheme = uk.tpc_scheme
    pair = (tool.storage_element(sdp.url(scheme, "x")), tool.storage_element(uk.url(scheme, "x")))
    (link,) = [c for c in tool.link_configs() if c.pair == pair]
    assert link.max_active == link.min_active == entry["lane_files"]
    # And its streams per copy are the link's, which the endpoint gives the conveyor's jobs (they ask none).
    assert link.nostreams == entry["streams"] // entry["files"] >= 1

    assert rule_outcome(rucio, rule.rule_id, timeout=150) == "OK"
    followed(product, ProductState.PLACED)
    replica.refresh_from_db()
    assert replica.state == ReplicaState.AVAILABLE
    assert replica.reason.startswith(
        f"{policy.name} (weighted_share): first copy; push plan: SKA1-Low -> UKSRC"
    )
    assert f"rucio rule {rule.rule_id}" in replica.reason and replica.reason.endswith(": OK"), replica.reason
    for f in product.files.all():
        assert adler32_of(rucio_sites["UKSRC_DISK"].local_path(f"srcnet/{f.relative_path}")) == f.adler32
    # Rucio's conveyor submitted the copy to the platform's FTS3 endpoint, on the link the plan limited.
    job = TransferJob.objects.get(files__dest_surl__contains=f"/{product.name}/a.ms")
    assert {(f.source_se, f.dest_se) for f in job.files.all()} == {pair}
    assert "nostreams" not in job.internal_params, job.internal_params  # Rucio sends none...
    # ... and each copy ran the plan's streams, the link's.
    attempts = TransferAttempt.objects.filter(file__job=job)
    assert attempts and {a.copy_params.get("nbstreams") for a in attempts} == {link.nostreams}
    # Rucio's conveyor marked each file with the SciTags mark of the rule's activity ([packet-marking], read
    # from the platform's /api/scitags/): the endpoint kept the client's mark, the platform's for the push.
    marks = {(f.scitag, f.scitag_from_client) for f in job.files.all()}
    assert marks == {(flow_id(rule.activity), True)} and flow_id(rule.activity) == 42 << 6 | 2, marks
    # The conveyor's jobs (Rucio's metadata) find that plan: the product arrived on its lane.
    assert plan.predicted_arrival is not None
    assert arrival_delays(3600)[("SKA1-Low", "UKSRC")].jobs == 1
    # And the endpoint's admission held the conveyor's copies to that limit: from the service's own records
    # (every attempt, from its admission to its end), the product's two files never ran at once.
    attempts = TransferAttempt.objects.filter(file__dest_surl__contains=f"/{product.name}/")
    spans = [(a.started, a.finished) for a in attempts if a.finished is not None]
    assert link.max_active == 1 and len(spans) >= 2 and most_at_once(spans) == 1, spans
    assert push_cycle(transfertool=tool).legs_submitted == 0


MIB = 1024 * 1024


# exclusive: ss samples the copy's connections in real time (tests/integration/test_streams_on_the_wire.py).
@pytest.mark.exclusive
def test_a_rucio_mode_copy_runs_the_plans_streams_on_the_wire(  # type: ignore[no-untyped-def]
    rucio_sites, rucio, rucio_mode, conveyor_cert, scope, settings, test_state
):
    """The plan's streams per copy reach the wire in Rucio mode as in the platform's own: the push loop sets
    them on the lane's link, Rucio's conveyor submits the copy (its job asks no streams), the endpoint gives
    it the link's, and the destination's XRootD pulls the file (HTTP-TPC, davs:// as Rucio copies here)
    over that many connections, each carrying its blocks, while ``ss`` counts them as the platform's own
    streams test does."""
    from schedulers.loop import push_cycle
    from schedulers.planning import PlanConfig
    from topology.models import Dtn
    from transfers.embedded_transfertool import EmbeddedTransfertool
    from transfers.models import TransferAttempt

    settings.SRCNET_PUSH_THROUGH = "rucio"
    _everything_to_uk(scope)
    # DTNs whose TCP window (4 MiB) lets one stream carry some 130 Mbit/s at the lane's RTT: the plan asks
    # the lane for more streams than a copy may run, so each copy gets the most it may (2 here).
    Dtn.objects.update(tcp_window_bytes=4 * MIB)
    # HTTP-TPC pulls 16 MiB blocks, one stream each: 4 blocks per stream, so each stream has blocks to pull
    # for as long as the copy lasts.
    product = product_on_disk(rucio_sites, scope, {"big.ms": 8 * 16 * MIB})
    tool = EmbeddedTransfertool()
    server = read_pid(test_state, "xrootd-UKSRC_DISK")
    assert server is not None

    with ConnectionSampler(rucio_sites["SKA1-LOW_SDP"].http_port, server) as wire:
        cycle = push_cycle(transfertool=tool, config=PlanConfig(max_files=1, max_streams_per_file=2))
        assert cycle.error == "" and len(cycle.submitted) == 1, cycle.error
        (entry,) = cycle.submitted
        rule_id = entry["job_id"]
        try:
            assert rule_outcome(rucio, rule_id, timeout=120) == "OK"
        except pytest.fail.Exception:
            files = [(scope, f"{product.name}/big.ms")]
            pytest.fail(rule_diagnosis(rucio, rule_id, files, "UKSRC_DISK", test_state.path / "log"))

    streams = entry["streams"] // entry["files"]
    assert streams == 2 and entry["lane_files"] == 1, entry
    (attempt,) = TransferAttempt.objects.filter(file__dest_surl__contains=f"/{product.name}/big.ms")
    assert attempt.file.job.internal_params.get("nostreams") is None  # Rucio asked none
    assert attempt.copy_params.get("nbstreams") == streams, attempt.copy_params
    assert wire.samples >= 10, wire.samples
    data = wire.carrying(MIB)
    # one connection per stream, each pulling its own blocks, and the one that asked the size first
    assert len(data) == streams, wire.seen
    assert len(wire.seen) == expected_connections("XrdHttpTPC", streams), wire.seen
