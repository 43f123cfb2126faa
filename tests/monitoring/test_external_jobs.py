"""Push jobs submitted to an FTS3 the platform does not run (``SRCNET_TRANSFERTOOL=fts3``) count in the
planned rate, the lanes and the arrival delays from the push loop's own record of them (its copy requests:
the plan it gave each job, settled by the poll); a job the "external" FTS3 shares with the platform's own
service (its own endpoint, as in the integration tests) counts once."""

from __future__ import annotations

import copy as deep
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from identity.tokens import issue
from replicas.choices import ProductState
from schedulers.external import settle_external_job
from schedulers.models import ExternalJob
from topology.models import StorageEndpoint
from transfers.models import TransferJob

from ..factories import copy_request
from ..fts3.recorded import FTS3_CLIENT_SUBMISSION
from .data import GIB, product
from .test_rucio_jobs import LOW, metrics

pytestmark = pytest.mark.django_db

TO_UK = (("destination_site", "UKSRC"), ("source_site", "SKA1-Low"))
TO_AU = (("destination_site", "AUSRC"), ("source_site", "SKA1-Low"))
OWN_ENDPOINT = "https://127.0.0.1:8446/fts3"
FAR_ENDPOINT = "https://fts3.example.org:8446"


def push_metadata(destination: str) -> dict[str, Any]:
    """What the push loop puts in a job's metadata (schedulers/leg_submission.py): the lane, for FTS3."""
    return {"product": "ska:obs-9", "lane": ["SKA1-Low", destination]}


def submitted_to_the_platform(operator, metadata: dict[str, Any]) -> str:  # type: ignore[no-untyped-def]
    """A job posted to the platform's own FTS3 endpoint as the fts3 client posts it; its id."""
    token = issue(operator, name="test", scope="fts3")[1]
    sdp, uk = (StorageEndpoint.objects.get(name=n) for n in ("SKA1-LOW_SDP", "UKSRC_DISK"))
    payload = deep.deepcopy(FTS3_CLIENT_SUBMISSION)
    payload["params"]["job_metadata"] = metadata
    payload["files"][0]["sources"] = [f"root://{sdp.hostname}:{sdp.root_port}//srcnet/ska/obs-9/f.ms"]
    payload["files"][0]["destinations"] = [f"root://{uk.hostname}:{uk.root_port}//srcnet/ska/obs-9/f.ms"]
    answer = Client(HTTP_AUTHORIZATION=f"Bearer {token}").post(
        "/fts3//jobs", payload, content_type="application/json"
    )
    assert answer.status_code == 200, answer.content
    return str(answer.json()["job_id"])


def test_jobs_at_an_external_fts3_count_with_their_plan(reference_topology, operator) -> None:  # type: ignore[no-untyped-def]
    obs = product("obs-9", telescope="SKA1-Low", size=GIB, state=ProductState.PLACING, deadline_in=None)
    # The push loop's job to UKSRC went to the platform's own endpoint through its FTS3 client: it is a
    # transfer row here as well as an ExternalJob, with one copy request.
    own_id = submitted_to_the_platform(operator, push_metadata("UKSRC"))
    assert TransferJob.objects.get(job_id=own_id).metadata["lane"] == ["SKA1-Low", "UKSRC"]
    ExternalJob.objects.create(endpoint=OWN_ENDPOINT, job_id=own_id, metadata=push_metadata("UKSRC"))
    copy_request(obs, job_id=own_id, endpoint=OWN_ENDPOINT, planned_bps=2e9, streams=3)
    # The one to AUSRC went to an FTS3 elsewhere: only the platform's records know it.
    far_id = str(uuid.uuid4())
    row = ExternalJob.objects.create(endpoint=FAR_ENDPOINT, job_id=far_id, metadata=push_metadata("AUSRC"))
    copy_request(
        obs,
        lane=("SKA1-Low", "AUSRC"),
        job_id=far_id,
        endpoint=FAR_ENDPOINT,
        planned_bps=5e9,
        streams=2,
        predicted_arrival=timezone.now() - timedelta(seconds=20),
    )

    samples = metrics()
    assert samples[("srcnet_access_link_planned_bits_per_second", LOW)] == 7e9  # the shared job once
    assert samples[("srcnet_lane_push_jobs", TO_UK)] == 1
    assert samples[("srcnet_lane_push_jobs", TO_AU)] == 1
    assert samples[("srcnet_lane_planned_streams", TO_AU)] == 2
    assert samples[("srcnet_lane_planned_bits_per_second", TO_AU)] == 5e9

    # The poll finds it FINISHED and settles it (schedulers/external.py): it arrived then, 20 s after the
    # plan's prediction at the earliest.
    ExternalJob.objects.filter(pk=row.pk).update(state="FINISHED")
    before = timezone.now()
    assert settle_external_job(row.pk, "FINISHED", [])
    samples = metrics()
    assert samples[("srcnet_access_link_planned_bits_per_second", LOW)] == 2e9
    assert ("srcnet_lane_push_jobs", TO_AU) not in samples
    assert samples[("srcnet_push_arrivals", TO_AU)] == 1
    delay = samples[("srcnet_push_arrival_delay_seconds", TO_AU)]
    assert 20 <= delay <= 20 + (timezone.now() - before + timedelta(seconds=1)).total_seconds()
    assert ("srcnet_push_arrivals", TO_UK) not in samples  # still in flight
