"""The real ``fts3`` client package against the embedded service over HTTP, moving real files between
real XRootD sites through the Celery worker; and the platform's FTS3 transfertool on the same endpoint."""

from __future__ import annotations

import json

import pytest
from fts3.rest.client import easy
from fts3.rest.client.context import Context

from identity.tokens import issue
from tests.conftest import wait_until
from tests.integration.conftest import adler32_of, put_file, unique
from transfers.models import LinkLimit, TransferJob
from transfertools.fts3_rest import Fts3Transfertool
from transfertools.interface import JobParams, TransferRequest

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
MIB = 1024 * 1024


@pytest.fixture
def fts_context(live_server, operator):  # type: ignore[no-untyped-def]
    token = issue(operator, name="test", scope="fts3")[1]
    return Context(f"{live_server.url}/fts3", fts_access_token=token, verify=False), token


def _final_state(context: Context, job_id: str, timeout: float = 180) -> dict:  # type: ignore[type-arg]
    def finished():
        status = easy.get_job_status(context, job_id)
        return status if status["job_state"] in ("FINISHED", "FAILED", "FINISHEDDIRTY", "CANCELED") else None

    return wait_until(finished, timeout=timeout, what=f"job {job_id}")


def test_fts3_client_submits_polls_lists_and_files_move(celery_worker, xrootd_sites, fts_context):
    context, _ = fts_context
    source, destination = xrootd_sites["SKA1-LOW_SDP"], xrootd_sites["UKSRC_DISK"]
    name = unique("fts3")
    sums = {
        f: put_file(source, f"ska/{name}/{f}", size) for f, size in (("a.ms", 2 * MIB), ("b.ms", 3 * MIB + 1))
    }
    assert easy.whoami(context)["vos"] == ["ska"]
    transfers = [
        easy.new_transfer(
            source.davs_url(f"srcnet/ska/{name}/{f}"),
            destination.davs_url(f"srcnet/ska/{name}/{f}"),
            checksum=f"ADLER32:{s}",
            metadata={"file": f},
            activity="SKA Data Products",
        )
        for f, s in sums.items()
    ]
    job_id = easy.submit(
        context, easy.new_job(transfers, verify_checksum="both", priority=4, metadata={"t": 1})
    )
    status = _final_state(context, job_id)
    assert status["job_state"] == "FINISHED" and status["priority"] == 4
    listed = easy.get_job_status(context, job_id, list_files=True)
    assert sorted(f["file_state"] for f in listed["files"]) == ["FINISHED", "FINISHED"]
    assert {f["file_metadata"]["file"] for f in listed["files"]} == set(sums)
    for f, checksum in sums.items():
        assert adler32_of(destination.local_path(f"srcnet/ska/{name}/{f}")) == checksum


def test_fts3_client_reprioritises_and_cancels_a_queued_job(celery_worker, xrootd_sites, fts_context):
    context, _ = fts_context
    source, destination = xrootd_sites["SKA1-LOW_SDP"], xrootd_sites["AUSRC_DISK"]
    # One slot on this link, taken by a first job: the second waits in the queue.
    LinkLimit.objects.create(
        source_se=f"root://127.0.0.1:{source.root_port}",
        dest_se=f"root://127.0.0.1:{destination.root_port}",
        max_active=1,
    )
    name = unique("queued")
    checksum = put_file(source, f"ska/{name}/big.ms", 64 * MIB)
    first = easy.submit(
        context,
        easy.new_job(
            [
                easy.new_transfer(
                    source.root_url(f"srcnet/ska/{name}/big.ms"),
                    destination.root_url(f"srcnet/ska/{name}/big.ms"),
                    checksum=f"ADLER32:{checksum}",
                )
            ]
        ),
    )
    second = easy.submit(
        context,
        easy.new_job(
            [
                easy.new_transfer(
                    source.root_url(f"srcnet/ska/{name}/missing.ms"),
                    destination.root_url(f"srcnet/ska/{name}/copy.ms"),
                )
            ]
        ),
    )
    answer = json.loads(context.post_json(f"/jobs/{second}", {"params": {"priority": 5}}))
    assert answer["priority"] == 5 and answer["http_status"] == "200 Ok"
    cancelled = easy.cancel(context, second)
    assert cancelled["job_state"] == "CANCELED"
    assert _final_state(context, second)["job_state"] == "CANCELED"
    assert _final_state(context, first)["job_state"] == "FINISHED"
    assert not destination.local_path(f"srcnet/ska/{name}/copy.ms").exists()


def test_the_platform_transfertool_speaks_fts3(celery_worker, xrootd_sites, fts_context, live_server):
    _, token = fts_context
    tool = Fts3Transfertool(f"{live_server.url}/fts3", token=token, verify=False)
    source, destination = xrootd_sites["SKA1-LOW_SDP"], xrootd_sites["UKSRC_DISK"]
    name = unique("tool")
    checksum = put_file(source, f"ska/{name}/f.ms", MIB)
    job_id = tool.submit(
        [
            TransferRequest(
                source.root_url(f"srcnet/ska/{name}/f.ms"),
                destination.root_url(f"srcnet/ska/{name}/f.ms"),
                MIB,
                f"ADLER32:{checksum}",
                {"k": "v"},
            )
        ],
        JobParams(priority=2, activity="SKA Data Products"),
    )
    wait_until(lambda: tool.job_states([job_id]).get(job_id) == "FINISHED", timeout=120, what="the job")
    job = TransferJob.objects.get(job_id=job_id)
    assert job.priority == 2 and job.files.get().metadata == {"k": "v"}
    assert tool.job_states(["00000000-0000-0000-0000-000000000000"]) == {}
