"""The push loop pointed at the standalone FTS3-compatible service over HTTPS sets its plan's link limits
through FTS3's /config/links, and the service's own admission obeys them while the workers copy: never
more copies at once on the link than its max_active, read from the service's attempt records. A plan whose
limits the endpoint refuses moves nothing: the cycle's error names the field."""

from __future__ import annotations

import pytest

from identity.tokens import issue
from replicas.choices import ProductState
from replicas.services import FileSpec, register_product
from schedulers.loop import push_cycle
from schedulers.planning.types import PlanConfig
from srcnet.intervals import most_at_once
from tests.conftest import wait_until
from topology.models import StorageEndpoint
from transfers.choices import AttemptState
from transfers.models import LinkLimit, TransferAttempt, TransferJob
from transfers.services.common import transfer_settings
from transfertools.fts3_rest import Fts3Transfertool

from .conftest import adler32_of, put_file, unique

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
MIB = 1024 * 1024
FILES = 6


@pytest.fixture
def https_tool(https_fts3, scheduler_account, test_state):  # type: ignore[no-untyped-def]
    """The platform's FTS3 transfertool at the standalone service, verifying its certificate, with the
    scheduler's service account."""
    token = issue(scheduler_account, name="test", scope="fts3")[1]
    return Fts3Transfertool(https_fts3, token=token, verify=str(test_state.path / "pki" / "ca.pem"))


def test_the_loop_sets_link_limits_over_https_and_the_services_admission_obeys_them(
    celery_worker, bound_topology, to_uksrc, https_tool
):
    sdp, uk = bound_topology["SKA1-LOW_SDP"], bound_topology["UKSRC_DISK"]
    name = unique("cfg-limit")
    sums = {f"f{i}.ms": put_file(sdp, f"ska/{name}/f{i}.ms", 4 * MIB) for i in range(FILES)}
    product = register_product(
        scope="ska", name=name, telescope=to_uksrc, files=[FileSpec(f, 4 * MIB, s) for f, s in sums.items()]
    )
    # The destination pulls with its own third-party-copy protocol; the link is named after it.
    scheme = StorageEndpoint.objects.get(name="UKSRC_DISK").tpc_scheme
    port = "root_port" if scheme in ("root", "xroot") else "http_port"
    link = tuple(f"{scheme}://127.0.0.1:{getattr(site, port)}" for site in (sdp, uk))
    # Without the plan's limit this link would admit more copies at once than the plan allows, and the
    # worker would run them (it has a process for each copy slot, srcnet/workers.py): so what bounds the
    # copies below is the limit the loop set.
    assert not LinkLimit.objects.exists()
    config = transfer_settings()
    unplanned = min(config["DEFAULT_MAX_ACTIVE_PER_LINK"], config["COPY_SLOTS"])

    cycle = push_cycle(transfertool=https_tool, config=PlanConfig(max_files=2))
    assert cycle.error == "", cycle.error
    (entry,) = cycle.submitted
    limit = entry["lane_files"]
    assert limit == 2 < unplanned

    # The service holds the plan's limit, as its own configuration API answers over HTTPS.
    (config,) = [c for c in https_tool.link_configs() if c.pair == link]
    assert (config.min_active, config.max_active, config.optimizer_mode) == (limit, limit, 0)
    assert LinkLimit.objects.get(source_se=link[0], dest_se=link[1]).max_active == limit

    def placed() -> bool:
        product.refresh_from_db()
        return product.state in (ProductState.PLACED, ProductState.FAILED)

    wait_until(placed, timeout=240, what=f"{product.did} to be placed")
    assert product.state == ProductState.PLACED
    for f, checksum in sums.items():
        assert adler32_of(uk.local_path(f"srcnet/ska/{name}/{f}")) == checksum

    # The service's own records of its admissions: every attempt of the job, from its creation (the
    # admission) to its end. Never more than the limit at once, and the limit was reached.
    job = TransferJob.objects.get(job_id=entry["job_id"])
    attempts = list(TransferAttempt.objects.filter(file__job=job))
    assert len(attempts) == FILES and all(a.state == AttemptState.SUCCEEDED for a in attempts), [
        (a.state, a.reason) for a in attempts
    ]
    spans = [(a.started, a.finished) for a in attempts if a.finished is not None]
    assert len(spans) == FILES and most_at_once(spans) == limit
    files = list(job.files.all())
    assert {(f.source_se, f.dest_se) for f in files} == {link}
    times = [(f.start_time, f.finish_time) for f in files if f.start_time and f.finish_time]
    assert len(times) == FILES and most_at_once(times) == limit


def test_a_plan_the_endpoint_refuses_moves_nothing_and_the_cycle_names_the_field(
    bound_topology, to_uksrc, https_tool
):
    """A transfertool that names storage elements as a production FTS3 does (scheme://host), at this
    service whose sites differ only by port: the service refuses the link, naming the field, and the loop
    submits nothing, places nothing, and leaves the service's links as they were."""
    sdp = bound_topology["SKA1-LOW_SDP"]
    name = unique("cfg-refused")
    checksum = put_file(sdp, f"ska/{name}/f.ms", MIB)
    product = register_product(
        scope="ska", name=name, telescope=to_uksrc, files=[FileSpec("f.ms", MIB, checksum)]
    )
    https_tool.context.get_endpoint_info().pop("srcnet")
    cycle = push_cycle(transfertool=https_tool)
    scheme = StorageEndpoint.objects.get(name="UKSRC_DISK").tpc_scheme
    assert f"source: '{scheme}://127.0.0.1' is neither '*' nor the storage element" in cycle.error, (
        cycle.error
    )
    assert cycle.legs_submitted == 0 and not TransferJob.objects.exists() and not LinkLimit.objects.exists()
    product.refresh_from_db()
    assert product.state == ProductState.REGISTERED
    assert not product.replicas.exclude(endpoint__role="sdp").exists()
