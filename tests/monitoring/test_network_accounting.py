"""Network accounting (monitoring/network_accounting.py): a real firefly collector on the loopback receives
end fireflies over UDP; the control plane reads its journal (``GET /flows``) and attributes each flow to
the copy whose attempt used the reporting endpoint while the flow was open, and so to its lane, policy and
rule; flows several copies could have carried are shared by size; flows no copy explains stay against
their endpoint; unknown reporters are counted; nothing is counted twice, across runs or a collector's
restart; a collector that does not answer changes nothing. (The fireflies from real XRootD sites during
a push: tests/integration/test_push.py.)"""

from __future__ import annotations

import datetime as dt
import json
import socket
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from django.utils import timezone

from localnet.pki import ca_certificate, ensure_pki, host_credentials
from monitoring.collectors import StateCollector
from monitoring.fireflies.collector import FireflyCollector
from monitoring.fireflies.journal import FlowJournal
from monitoring.models import FireflyCursor, FlowTraffic
from monitoring.network_accounting import CollectorUnreachable, account_flows
from replicas.models import DataProduct, ProductFile, Replica, ReplicaPolicy
from rules.api.serializers import RuleSerializer
from rules.models import Rule
from tests.factories import push_job_for
from tests.fireflies import datagram, firefly
from topology.models import StorageEndpoint
from transfers.models import TransferAttempt, TransferFile, TransferJob

pytestmark = pytest.mark.django_db

# The reference topology's endpoints at addresses of their own (IP literals: nothing to resolve).
ADDRESSES = {"SKA1-LOW_SDP": "10.1.0.1", "UKSRC_DISK": "10.2.0.1", "AUSRC_DISK": "10.3.0.1"}
MIB = 1024 * 1024


@pytest.fixture
def endpoints(reference_topology) -> dict[str, StorageEndpoint]:  # type: ignore[no-untyped-def]
    for name, address in ADDRESSES.items():
        StorageEndpoint.objects.filter(name=name).update(hostname=address, root_port=1094)
    return {e.name: e for e in StorageEndpoint.objects.filter(name__in=ADDRESSES).select_related("site")}


TOKEN = "a-token-for-the-accounting-tests"


@pytest.fixture(autouse=True)
def _the_collectors_token(settings) -> None:  # type: ignore[no-untyped-def]
    """The platform's side of the collector's credential (SRCNET_FIREFLIES_TOKEN)."""
    settings.SRCNET_FIREFLIES = {"URL": "", "TOKEN": TOKEN, "CA_FILE": ""}


@pytest.fixture
def collector() -> Iterator[FireflyCollector]:
    running = FireflyCollector(["127.0.0.1:0"], metrics="127.0.0.1:0", http_token=TOKEN).start()
    try:
        yield running
    finally:
        running.stop()


def url_of(collector: FireflyCollector) -> str:
    address = collector.metrics_address
    assert address is not None
    return f"http://{address[0]}:{address[1]}"


def journal_request(collector: FireflyCollector, path: str) -> urllib.request.Request:
    return urllib.request.Request(url_of(collector) + path, headers={"Authorization": f"Bearer {TOKEN}"})


def send_ended(
    collector: FireflyCollector,
    *,
    src: str,
    dst: str,
    src_port: int,
    dst_port: int,
    sent: int,
    start: dt.datetime,
    end: dt.datetime,
    received: int = 0,
) -> None:
    """One end firefly (as XRootD sends it), and wait until the journal holds it."""
    before = collector.journal.last
    document = firefly(
        "end", src=src, dst=dst, src_port=src_port, dst_port=dst_port, sent=sent, received=received
    )
    document["flow-lifecycle"].update(
        {"start-time": start.isoformat(), "current-time": end.isoformat(), "end-time": end.isoformat()}
    )
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.sendto(datagram(document), collector.udp_addresses[0])
    deadline = time.monotonic() + 10
    while collector.journal.last == before:
        assert time.monotonic() < deadline, "the collector did not journal the flow"
        time.sleep(0.01)


def a_copy(
    source: StorageEndpoint,
    destination: StorageEndpoint,
    *,
    size: int,
    started: dt.datetime,
    finished: dt.datetime | None,
    replica: Replica | None = None,
    activity: str = "SKA Data Products",
) -> TransferFile:
    """A copy of the platform's transfer service: its job, file and one attempt over those times."""
    job = (
        push_job_for(replica, lane=(source.site.name, destination.site.name), activity=activity)
        if replica is not None
        else TransferJob.objects.create(activity=activity)
    )
    path = f"ska/p{job.pk}/f.ms"
    copied = TransferFile.objects.create(
        job=job,
        file_index=0,
        activity=activity,
        source_surl=source.url("root", path),
        dest_surl=destination.url("root", path),
        filesize=size,
    )
    attempt = TransferAttempt.objects.create(file=copied, number=1, finished=finished)
    TransferAttempt.objects.filter(pk=attempt.pk).update(started=started)  # auto_now_add: set afterwards
    return copied


def a_replica(endpoint: StorageEndpoint, *, policy: ReplicaPolicy | None = None) -> Replica:
    sdp = StorageEndpoint.objects.get(name="SKA1-LOW_SDP")
    product = DataProduct.objects.create(
        scope="ska", name=f"p{DataProduct.objects.count()}", telescope_id=sdp.site_id, source=sdp
    )
    ProductFile.objects.create(product=product, name="f.ms", size_bytes=MIB, adler32="00000001")
    return Replica.objects.create(product=product, endpoint=endpoint, policy=policy)


def test_a_flow_goes_to_the_copy_its_endpoint_served_and_so_to_its_rule_policy_and_lane(
    endpoints, collector, scientist
) -> None:  # type: ignore[no-untyped-def]
    sdp, uk = endpoints["SKA1-LOW_SDP"], endpoints["UKSRC_DISK"]
    policy = ReplicaPolicy.objects.create(name="net-acct", telescope_id=sdp.site_id)
    replica = a_replica(uk, policy=policy)
    rule = Rule.objects.create(owner=scientist, rse_expression="UKSRC_DISK", activity="SKA User Request")
    rule.replicas.add(replica)
    now = timezone.now()
    copied = a_copy(
        sdp,
        uk,
        size=64 * MIB,
        started=now - dt.timedelta(seconds=30),
        finished=now - dt.timedelta(seconds=5),
        replica=replica,
        activity="SKA User Request",
    )
    # The source's server reports the puller's connection: 64 MiB sent, a little received.
    send_ended(
        collector,
        src="10.1.0.1",
        dst="10.2.0.1",
        src_port=1094,
        dst_port=40001,
        sent=64 * MIB,
        received=4096,
        start=now - dt.timedelta(seconds=28),
        end=now - dt.timedelta(seconds=6),
    )

    run = account_flows(url_of(collector))

    assert (run.read, run.matched, run.unmatched, run.missed) == (1, 1, 0, 0)
    traffic = FlowTraffic.objects.get()
    assert traffic.key == f"file:{copied.pk}" and traffic.file == copied
    assert (traffic.rule, traffic.policy) == (rule, policy)
    assert (traffic.source_site, traffic.destination_site) == ("SKA1-Low", "UKSRC")
    assert traffic.activity == "SKA User Request" and traffic.experiment == 20
    assert (traffic.flows, traffic.shared_flows, traffic.bytes) == (1, 0, 64 * MIB + 4096)
    assert RuleSerializer(rule).data["network"] == {"flows": 1, "bytes": 64 * MIB + 4096, "shared_flows": 0}

    # Read again: nothing new, nothing counted twice.
    assert account_flows(url_of(collector)).read == 0
    assert FlowTraffic.objects.get().bytes == 64 * MIB + 4096

    # The platform's metrics: by lane, activity and what asked for it (a rule), not by rule id.
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in StateCollector().collect()
        for s in family.samples
        if s.name.startswith("srcnet_network_traffic")
    }
    labels = (
        ("activity", "SKA User Request"),
        ("destination", "UKSRC"),
        ("owner", "rule"),
        ("source", "SKA1-Low"),
    )
    assert samples[("srcnet_network_traffic_bytes_total", labels)] == 64 * MIB + 4096
    assert samples[("srcnet_network_traffic_flows_total", labels)] == 1


def test_a_copy_rucios_conveyor_submitted_goes_to_the_scientists_rule_by_its_file_metadata(
    endpoints, collector, scientist
) -> None:  # type: ignore[no-untyped-def]
    """Rucio mode: the conveyor's job names no replica of the platform's; its files' metadata name the
    file DID (<product>/<file>) and the destination RSE, and the platform's rule keeps the Rucio rule per
    product."""
    sdp, uk = endpoints["SKA1-LOW_SDP"], endpoints["UKSRC_DISK"]
    replica = a_replica(uk)
    product = replica.product
    rule = Rule.objects.create(
        owner=scientist,
        rse_expression="UKSRC_DISK",
        destinations=["UKSRC_DISK"],
        rucio_rules={product.did: "0123456789abcdef0123456789abcdef"},
        rucio_account="alice",
    )
    now = timezone.now()
    copied = a_copy(
        sdp, uk, size=MIB, started=now - dt.timedelta(seconds=30), finished=now - dt.timedelta(seconds=5)
    )
    copied.metadata = {
        "scope": "ska",
        "name": f"{product.name}/f.ms",
        "dst_rse": "UKSRC_DISK",
        "request_id": "r1",
    }
    copied.save(update_fields=["metadata"])
    send_ended(
        collector,
        src="10.1.0.1",
        dst="10.2.0.1",
        src_port=1094,
        dst_port=40006,
        sent=MIB,
        start=now - dt.timedelta(seconds=28),
        end=now - dt.timedelta(seconds=6),
    )
    account_flows(url_of(collector))
    traffic = FlowTraffic.objects.get(file=copied)
    assert traffic.rule == rule and traffic.bytes == MIB
    assert RuleSerializer(rule).data["network"]["bytes"] == MIB


def test_a_flow_several_copies_could_have_carried_is_shared_by_their_sizes(endpoints, collector) -> None:  # type: ignore[no-untyped-def]
    sdp, uk = endpoints["SKA1-LOW_SDP"], endpoints["UKSRC_DISK"]
    now = timezone.now()
    window: dict[str, Any] = {
        "started": now - dt.timedelta(seconds=20),
        "finished": now - dt.timedelta(seconds=2),
    }
    small = a_copy(sdp, uk, size=1 * MIB, **window)
    large = a_copy(sdp, uk, size=3 * MIB, **window)
    send_ended(
        collector,
        src="10.1.0.1",
        dst="10.2.0.1",
        src_port=1094,
        dst_port=40002,
        sent=4000,
        start=now - dt.timedelta(seconds=18),
        end=now - dt.timedelta(seconds=3),
    )
    account_flows(url_of(collector))
    rows = {t.file_id: t for t in FlowTraffic.objects.all()}
    assert (rows[small.pk].bytes, rows[large.pk].bytes) == (1000, 3000)
    assert all(t.flows == t.shared_flows == 1 for t in rows.values())
    # The policy-less, rule-less copies count as "other" in the metrics.
    assert {t.rule_id for t in rows.values()} == {None}


def test_the_peers_address_picks_the_copy_where_it_is_another_endpoints(endpoints, collector) -> None:  # type: ignore[no-untyped-def]
    sdp, uk, au = endpoints["SKA1-LOW_SDP"], endpoints["UKSRC_DISK"], endpoints["AUSRC_DISK"]
    now = timezone.now()
    window: dict[str, Any] = {
        "started": now - dt.timedelta(seconds=20),
        "finished": now - dt.timedelta(seconds=2),
    }
    to_uk = a_copy(sdp, uk, size=MIB, **window)
    a_copy(sdp, au, size=MIB, **window)
    send_ended(
        collector,
        src="10.1.0.1",
        dst="10.2.0.1",
        src_port=1094,
        dst_port=40003,
        sent=MIB,
        start=now - dt.timedelta(seconds=18),
        end=now - dt.timedelta(seconds=3),
    )
    account_flows(url_of(collector))
    (traffic,) = FlowTraffic.objects.all()
    assert traffic.file_id == to_uk.pk and traffic.shared_flows == 0 and traffic.bytes == MIB


def test_flows_no_copy_explains_stay_against_their_endpoint_and_unknown_reporters_are_counted(
    endpoints, collector
) -> None:  # type: ignore[no-untyped-def]
    sdp, uk = endpoints["SKA1-LOW_SDP"], endpoints["UKSRC_DISK"]
    now = timezone.now()
    # A copy that ended a minute before the flow began: not the flow's.
    a_copy(sdp, uk, size=MIB, started=now - dt.timedelta(seconds=90), finished=now - dt.timedelta(seconds=60))
    send_ended(
        collector,
        src="10.2.0.9",
        dst="10.1.0.1",
        src_port=50000,
        dst_port=1094,
        sent=0,
        received=777,
        start=now - dt.timedelta(seconds=20),
        end=now - dt.timedelta(seconds=10),
    )
    send_ended(
        collector,
        src="192.0.2.7",
        dst="192.0.2.8",
        src_port=1094,
        dst_port=50001,
        sent=5,
        start=now - dt.timedelta(seconds=20),
        end=now - dt.timedelta(seconds=10),
    )
    run = account_flows(url_of(collector))
    assert (run.read, run.matched, run.unmatched) == (2, 1, 1)
    (traffic,) = FlowTraffic.objects.all()
    assert traffic.key == "endpoint:SKA1-LOW_SDP" and traffic.file is None and traffic.bytes == 777
    assert FireflyCursor.objects.get().unmatched == 1


def test_a_restarted_collector_is_read_from_its_start_and_flows_lost_from_the_ring_are_counted(
    endpoints,
) -> None:  # type: ignore[no-untyped-def]
    sdp, uk = endpoints["SKA1-LOW_SDP"], endpoints["UKSRC_DISK"]
    now = timezone.now()
    copied = a_copy(sdp, uk, size=MIB, started=now - dt.timedelta(seconds=60), finished=None)
    flow: dict[str, Any] = {
        "src": "10.1.0.1",
        "dst": "10.2.0.1",
        "src_port": 1094,
        "sent": 100,
        "start": now - dt.timedelta(seconds=50),
        "end": now - dt.timedelta(seconds=40),
    }
    first = FireflyCollector(
        ["127.0.0.1:0"], metrics="127.0.0.1:0", journal=FlowJournal(2), http_token=TOKEN
    ).start()
    try:
        url = url_of(first)
        for port in range(41000, 41005):  # five flows into a ring of two
            send_ended(first, dst_port=port, **flow)
        run = account_flows(url)
    finally:
        first.stop()
    assert (run.read, run.missed) == (2, 3)
    assert FlowTraffic.objects.get(file=copied).bytes == 200
    assert FireflyCursor.objects.get(url=url).missed == 3

    # The same address, a new collector: its numbers start again; the cursor follows its epoch.
    second = FireflyCollector(["127.0.0.1:0"], metrics=url.removeprefix("http://"), http_token=TOKEN).start()
    try:
        send_ended(second, dst_port=41010, **flow)
        run = account_flows(url)
    finally:
        second.stop()
    assert run.read == 1 and FlowTraffic.objects.get(file=copied).bytes == 300


def test_a_collector_that_does_not_answer_changes_nothing(endpoints, collector) -> None:  # type: ignore[no-untyped-def]
    url = url_of(collector)
    now = timezone.now()
    send_ended(
        collector,
        src="10.1.0.1",
        dst="10.2.0.1",
        src_port=1094,
        dst_port=40004,
        sent=1,
        start=now - dt.timedelta(seconds=5),
        end=now,
    )
    collector.stop()
    with pytest.raises(CollectorUnreachable, match="firefly collector"):
        account_flows(url, timeout=2)
    assert not FlowTraffic.objects.exists()
    assert not FireflyCursor.objects.filter(after__gt=0).exists()


def test_the_journal_answers_a_bad_cursor_with_a_400_naming_it(collector) -> None:  # type: ignore[no-untyped-def]
    for query, field in (("after=-1", "after"), ("after=x", "after"), ("limit=1e3", "limit")):
        try:
            urllib.request.urlopen(journal_request(collector, f"/flows?{query}"), timeout=5)
        except urllib.error.HTTPError as refused:
            assert refused.code == 400 and field in json.loads(refused.read())
        else:
            pytest.fail(f"/flows?{query} was accepted")
    with urllib.request.urlopen(journal_request(collector, "/flows?after=0&limit=10"), timeout=5) as answer:
        page = json.loads(answer.read())
    assert page["flows"] == [] and page["missed"] == 0 and page["epoch"] == collector.journal.epoch


def test_the_journal_demands_its_bearer_token_and_speaks_https(endpoints, test_state, settings) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="bearer token"):
        FireflyCollector(["127.0.0.1:0"], metrics="0.0.0.0:0")
    ensure_pki(test_state)
    cert, key = host_credentials(test_state)
    running = FireflyCollector(
        ["127.0.0.1:0"], metrics="127.0.0.1:0", http_token="a-long-secret", tls=(str(cert), str(key))
    ).start()
    try:
        now = timezone.now()
        send_ended(
            running,
            src="10.1.0.1",
            dst="10.2.0.1",
            src_port=1094,
            dst_port=40005,
            sent=3,
            start=now - dt.timedelta(seconds=5),
            end=now,
        )
        address = running.metrics_address
        assert address is not None
        url = f"https://127.0.0.1:{address[1]}"
        ca = str(ca_certificate(test_state))
        for token in ("", "a-wrong-secret"):
            settings.SRCNET_FIREFLIES = {"URL": url, "TOKEN": token, "CA_FILE": ca}
            with pytest.raises(CollectorUnreachable, match="401"):
                account_flows()
        settings.SRCNET_FIREFLIES = {
            "URL": url.replace("https", "http"),
            "TOKEN": "a-long-secret",
            "CA_FILE": ca,
        }
        with pytest.raises(CollectorUnreachable):
            account_flows()
        assert not FlowTraffic.objects.exists()
        settings.SRCNET_FIREFLIES = {"URL": url, "TOKEN": "a-long-secret", "CA_FILE": ca}
        assert account_flows().read == 1 and FlowTraffic.objects.get().bytes == 3
    finally:
        running.stop()
