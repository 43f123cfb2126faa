"""A product written at the SDP is placed by policy and pushed to SRC storage by the Celery task path."""

from __future__ import annotations

import json

import pytest

from localnet.fireflies import collector_ports, collector_token
from localnet.scitags import REGISTRY
from monitoring.models import FlowTraffic
from monitoring.network_accounting import account_flows
from replicas.choices import ProductState, ReplicaState
from replicas.models import PolicyShare, ReplicaPolicy
from replicas.services import FileSpec, register_product
from schedulers.services import push_product
from tests.conftest import drive_push_loop, wait_until
from topology.models import StorageEndpoint, Telescope
from transfers.choices import FileState
from transfers.models import TransferFile, TransferJob

from .conftest import adler32_of, put_file, unique

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
MIB = 1024 * 1024


@pytest.fixture
def two_site_policy(bound_topology):  # type: ignore[no-untyped-def]
    telescope = Telescope.objects.get(name="SKA1-Low")
    ReplicaPolicy.objects.filter(telescope=telescope).update(is_active=False)
    policy = ReplicaPolicy.objects.create(name="low-uk-au", telescope=telescope)
    PolicyShare.objects.create(
        policy=policy, destination=StorageEndpoint.objects.get(name="UKSRC_DISK"), weight=1
    )
    PolicyShare.objects.create(
        policy=policy, destination=StorageEndpoint.objects.get(name="AUSRC_DISK"), weight=1
    )
    return policy


def test_products_are_pushed_to_their_policy_destinations(celery_worker, bound_topology, two_site_policy):
    sdp_site = bound_topology["SKA1-LOW_SDP"]
    telescope = Telescope.objects.get(name="SKA1-Low")
    products = []
    for index in range(4):
        name = unique(f"push{index}")
        files = []
        for part, size in enumerate((2 * MIB, 5 * MIB + 3)):
            file_name = f"{name}.part{part}.ms"
            files.append(FileSpec(file_name, size, put_file(sdp_site, f"ska/{name}/{file_name}", size)))
        product = register_product(scope="ska", name=name, telescope=telescope, files=files)
        push_product(product=product)
        products.append(product)

    def all_placed():
        for product in products:
            product.refresh_from_db()
        return all(p.state in (ProductState.PLACED, ProductState.FAILED) for p in products)

    # Two lanes, four products: each push placed what had a free lane; the loop's next cycles the rest.
    drive_push_loop(all_placed, timeout=240, what="the products to be placed")
    destinations = []
    for product in products:
        assert product.state == ProductState.PLACED, [r.reason for r in product.replicas.all()]
        replica = product.replicas.exclude(endpoint__name="SKA1-LOW_SDP").get()
        assert replica.state == ReplicaState.AVAILABLE and replica.policy == two_site_policy
        destinations.append(replica.endpoint.name)
        site = bound_topology[replica.endpoint.name]
        for f in product.files.all():
            assert adler32_of(site.local_path(f"srcnet/{f.relative_path}")) == f.adler32
    # Equal weights and equal sizes: two products each.
    assert sorted(destinations) == ["AUSRC_DISK", "AUSRC_DISK", "UKSRC_DISK", "UKSRC_DISK"]


def test_a_product_whose_file_is_missing_is_not_marked_complete(
    celery_worker, bound_topology, two_site_policy
):
    sdp_site = bound_topology["SKA1-LOW_SDP"]
    name = unique("broken")
    present = put_file(sdp_site, f"ska/{name}/present.ms", MIB)
    product = register_product(
        scope="ska",
        name=name,
        telescope=Telescope.objects.get(name="SKA1-Low"),
        files=[FileSpec("present.ms", MIB, present), FileSpec("absent.ms", MIB, "0cc737eb")],
    )
    push_product(product=product)

    def ended():
        product.refresh_from_db()
        return product.state in (ProductState.PLACED, ProductState.FAILED)

    wait_until(ended, timeout=240, what="the broken product to end")
    assert product.state == ProductState.FAILED
    replica = product.replicas.exclude(endpoint__name="SKA1-LOW_SDP").get()
    assert replica.state == ReplicaState.FAILED
    # The job ended dirty: present.ms arrived verified, absent.ms failed at its source on every one of the
    # configured tries; the replica's reason is that job's outcome with that file's failure, and nothing else.
    job = TransferJob.objects.get(job_id=replica.copy_requests.get().job_id)
    files = {f.metadata["file"]: f for f in job.files.all()}
    assert files["present.ms"].state == FileState.FINISHED
    absent = files["absent.ms"]
    assert absent.state == FileState.FAILED
    assert absent.attempts == job.retry + 1
    assert absent.reason.startswith(f"after {job.retry + 1} attempts: SOURCE "), absent.reason
    expected = f"transfer job {job.job_id} FINISHEDDIRTY: {absent.reason}"
    assert replica.reason.endswith(expected), replica.reason


def _firefly_totals(state) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """(flows ended, bytes sent) of the local SciTags experiment, from the state's firefly collector."""
    import requests
    from prometheus_client.parser import text_string_to_metric_families

    from localnet.scitags import EXPERIMENT

    registry = json.loads(REGISTRY.read_text())
    experiment = str(next(e["expId"] for e in registry["experiments"] if e["expName"] == EXPERIMENT))
    text = requests.get(
        f"http://127.0.0.1:{collector_ports(state)[1]}/metrics",
        headers={"Authorization": f"Bearer {collector_token(state)}"},
        timeout=10,
    ).text
    ended = sent = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.labels.get("experiment") != experiment:
                continue
            if sample.name == "srcnet_firefly_flows_total" and sample.labels.get("state") == "end":
                ended += sample.value
            if sample.name == "srcnet_firefly_bytes_total" and sample.labels.get("direction") == "sent":
                sent += sample.value
    return ended, sent


def test_a_pushs_connections_are_reported_by_the_sites_fireflies(
    celery_worker, bound_topology, two_site_policy, test_state, settings
):
    """Every local site sends fireflies (xrootd.pmark, localnet/fireflies.py) to the state's collector: a
    push over root:// third-party copy is seen there, its bytes among the experiment's (Debian's XRootD
    5.5.3 marks each connection with the experiment and activity 0: docs/network.md)."""
    names = ("SKA1-LOW_SDP", "UKSRC_DISK", "AUSRC_DISK")
    StorageEndpoint.objects.filter(name__in=names).update(tpc_scheme="root")
    ended, sent = _firefly_totals(test_state)
    size = 8 * MIB
    name = unique("marked")
    checksum = put_file(bound_topology["SKA1-LOW_SDP"], f"ska/{name}/{name}.ms", size)
    telescope = Telescope.objects.get(name="SKA1-Low")
    product = register_product(
        scope="ska", name=name, telescope=telescope, files=[FileSpec(f"{name}.ms", size, checksum)]
    )
    push_product(product=product)

    def placed() -> bool:
        product.refresh_from_db()
        return product.state in (ProductState.PLACED, ProductState.FAILED)

    drive_push_loop(placed, timeout=120, what="the product to be placed")
    assert product.state == ProductState.PLACED
    # The end fireflies come as the connections close (the destination's copy program at once; the
    # worker's own connections when XrdCl lets them go).
    wait_until(
        lambda: _firefly_totals(test_state)[1] - sent >= size,
        timeout=60,
        what="the sites' fireflies to report the copy's bytes",
    )
    assert _firefly_totals(test_state)[0] > ended

    # The control plane reads the collector's journal and puts the copy's flows on its copy, lane and
    # policy (monitoring/network_accounting.py): at least the product's bytes, sent by the SDP's server.
    settings.SRCNET_FIREFLIES = {"URL": "", "TOKEN": collector_token(test_state), "CA_FILE": ""}
    run = account_flows(f"http://127.0.0.1:{collector_ports(test_state)[1]}")
    assert run.matched >= 1, run
    copied = TransferFile.objects.get(dest_surl__endswith=f"/{name}/{name}.ms", state=FileState.FINISHED)
    traffic = FlowTraffic.objects.get(file=copied)
    assert traffic.policy == two_site_policy and traffic.rule is None
    assert traffic.source_site == "SKA1-Low" and traffic.destination_site in ("UKSRC", "AUSRC")
    assert traffic.activity == copied.activity and traffic.bytes >= size, traffic
