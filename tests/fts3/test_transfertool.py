"""The transfertool interface (submit, bulk query, cancel, update priority) through ``Fts3Transfertool``
against the embedded service over HTTP (the real ``fts3`` client package underneath), and through the
embedded transfertool in-process: both answer the same."""

from __future__ import annotations

import uuid

import pytest
import requests

from identity.tokens import issue
from tests.conftest import wait_until
from tests.integration.conftest import put_file, unique
from transfers.embedded_transfertool import EmbeddedTransfertool
from transfers.models import TransferJob
from transfers.services import pause_link
from transfertools.fts3_rest import Fts3Transfertool
from transfertools.interface import (
    JobParams,
    TransferRequest,
    Transfertool,
    TransfertoolError,
)

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
MIB = 1024 * 1024
UNKNOWN = "00000000-0000-0000-0000-000000000000"


def _exercise(tool: Transfertool, xrootd_sites) -> None:  # type: ignore[no-untyped-def]
    source, flowing, held = (
        xrootd_sites["SKA1-LOW_SDP"],
        xrootd_sites["UKSRC_DISK"],
        xrootd_sites["AUSRC_DISK"],
    )
    # The link to AUSRC admits nothing: the job sent there stays SUBMITTED until it is cancelled.
    pause_link(
        source_se=f"root://127.0.0.1:{source.root_port}",
        dest_se=f"root://127.0.0.1:{held.root_port}",
        reason="test: hold the queue",
    )
    name = unique("tool")
    checksum = put_file(source, f"ska/{name}/f.ms", MIB)

    def submit(destination, priority: int) -> str:  # type: ignore[no-untyped-def]
        return tool.submit(
            [
                TransferRequest(
                    source.root_url(f"srcnet/ska/{name}/f.ms"),
                    destination.root_url(f"srcnet/ska/{name}/f-{priority}.ms"),
                    MIB,
                    f"ADLER32:{checksum}",
                )
            ],
            JobParams(priority=priority, activity="SKA Data Products"),
        )

    done, queued = submit(flowing, 2), submit(held, 1)
    wait_until(lambda: tool.job_states([done]).get(done) == "FINISHED", timeout=120, what="the first job")

    tool.update_priority(queued, 5)
    assert TransferJob.objects.get(job_id=queued).priority == 5
    with pytest.raises(TransfertoolError):
        tool.update_priority(queued, 9)  # FTS3's range is 1-5: refused, nothing changed
    assert TransferJob.objects.get(job_id=queued).priority == 5
    with pytest.raises(TransfertoolError):
        tool.update_priority(UNKNOWN, 4)

    # One bulk query with an unknown id among known ones: FTS3 answers 207; the unknown id is left out.
    assert tool.job_states([done, queued, UNKNOWN]) == {done: "FINISHED", queued: "SUBMITTED"}
    assert tool.job_states([UNKNOWN]) == {}

    tool.cancel(queued)
    assert tool.job_states([queued, done, UNKNOWN]) == {queued: "CANCELED", done: "FINISHED"}
    assert tool.failure_reasons([queued, done, UNKNOWN]) == {queued: ["Job canceled by the user"], done: []}
    assert not held.local_path(f"srcnet/ska/{name}/f-1.ms").exists()
    with pytest.raises(TransfertoolError):
        tool.cancel(UNKNOWN)


def test_fts3_transfertool_cancels_reprioritises_and_queries_in_bulk_over_http(
    celery_worker, xrootd_sites, live_server, operator
):
    token = issue(operator, name="test", scope="fts3")[1]
    tool = Fts3Transfertool(f"{live_server.url}/fts3", token=token, verify=False)
    _exercise(tool, xrootd_sites)
    # The 207 is really what the endpoint answers for such a bulk query (the client raises on it; the
    # transfertool reads the entries instead).
    ids = ",".join([str(TransferJob.objects.earliest("created").job_id), UNKNOWN])
    answer = requests.get(
        f"{live_server.url}/fts3/jobs/{ids}", headers={"Authorization": f"Bearer {token}"}, timeout=30
    )
    assert answer.status_code == 207
    assert [e["http_status"] for e in answer.json()] == ["200 Ok", "404 Not Found"]


def test_embedded_transfertool_answers_the_same(celery_worker, xrootd_sites):
    _exercise(EmbeddedTransfertool(), xrootd_sites)


def test_fts3_transfertool_reports_an_unreachable_endpoint_as_its_own_error():
    tool = Fts3Transfertool("http://127.0.0.1:9/fts3", token="x", verify=False)  # made lazily: no error yet
    with pytest.raises(TransfertoolError, match="cannot use the FTS3 endpoint"):
        tool.job_states([str(uuid.uuid4())])
