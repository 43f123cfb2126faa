"""A product written at the SDP is placed by policy and pushed to SRC storage by the Celery task path."""

from __future__ import annotations

import pytest

from replicas.choices import ProductState, ReplicaState
from replicas.models import PolicyShare, ReplicaPolicy
from replicas.services import FileSpec, register_product
from schedulers.services import push_product
from tests.conftest import drive_push_loop, wait_until
from topology.models import StorageEndpoint, Telescope
from transfers.choices import FileState
from transfers.models import TransferJob

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
    job = TransferJob.objects.get(metadata__replica_id=replica.pk)
    files = {f.metadata["file"]: f for f in job.files.all()}
    assert files["present.ms"].state == FileState.FINISHED
    absent = files["absent.ms"]
    assert absent.state == FileState.FAILED
    assert absent.attempts == job.retry + 1
    assert absent.reason.startswith(f"after {job.retry + 1} attempts: SOURCE "), absent.reason
    expected = f"transfer job {job.job_id} FINISHEDDIRTY: {absent.reason}"
    assert replica.reason.endswith(expected), replica.reason
