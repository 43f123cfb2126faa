"""FTS3 REST conformance, from the bodies Rucio and the fts3 client really send (no workers needed)."""

from __future__ import annotations

import re
import uuid
from datetime import datetime

import pytest
from django.test import Client

from identity.tokens import issue
from transfers.choices import FileState, JobState, JobType
from transfers.fts3.submission import deterministic_job_id
from transfers.models import TransferFile, TransferJob

from .recorded import FTS3_CLIENT_SUBMISSION, RUCIO_POLL_FIELDS, RUCIO_SUBMISSION, body

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("recorded_storage")]
DATE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$")


def submit(client: Client, payload: dict, path: str = "/fts3/jobs"):  # type: ignore[no-untyped-def]
    return client.post(path, payload, content_type="application/json")


def test_root_and_whoami_have_what_clients_read(fts):
    root = fts.get("/fts3/").json()
    assert all(isinstance(root["api"][k], int) for k in ("major", "minor", "patch"))
    who = fts.get("/fts3//whoami").json()  # the fts3 client's double slash
    assert who["vos"] == ["ska"] and who["base_id"] == "01874efb-4735-4595-bc9c-591aef8240c9"
    assert who["user_dn"].endswith("CN=op") and who["method"] == "oauth2"


def test_rucio_submission_is_stored_verbatim(fts):
    response = submit(fts, RUCIO_SUBMISSION, "/fts3//jobs")
    assert response.status_code == 200, response.content
    job = TransferJob.objects.get(job_id=response.json()["job_id"])
    (row,) = job.files.all()
    assert job.job_type == JobType.NORMAL and job.priority == 3 and job.overwrite is True
    assert job.verify_checksum == "both" and row.checksum == "ADLER32:4782d438" and row.filesize == 1048576
    assert row.activity == "User Subscriptions"
    assert row.metadata == RUCIO_SUBMISSION["files"][0]["metadata"]
    assert job.metadata["issuer"] == "rucio" and job.metadata["multi_sources"] is False
    # 168 (an integer) means hours.
    assert job.expires is not None
    assert abs((job.expires - job.created).total_seconds() - 168 * 3600) < 5


def test_fts3_client_submission_params(fts):
    response = submit(fts, FTS3_CLIENT_SUBMISSION)
    assert response.status_code == 200
    job = TransferJob.objects.get(job_id=response.json()["job_id"])
    assert job.priority == 4 and job.retry == 2 and job.timeout == 3600 and job.overwrite is False
    assert job.internal_params == {"nostreams": 4, "buffer_size": 8388608}
    assert job.expires is not None
    assert abs((job.expires - job.created).total_seconds() - 6 * 3600) < 5
    assert job.files.get().activity == "ska-push"


def test_poll_answer_is_what_rucio_parses(fts):
    job_id = submit(fts, RUCIO_SUBMISSION).json()["job_id"]
    response = fts.get(f"/fts3/jobs/{job_id}", {"files": RUCIO_POLL_FIELDS})
    assert response.status_code == 200
    job = response.json()
    assert isinstance(job, dict) and job["http_status"] == "200 Ok" and job["job_id"] == job_id
    assert (
        job["job_state"] == "SUBMITTED" and job["job_type"] == "N" and isinstance(job["job_metadata"], dict)
    )
    assert DATE.match(job["submit_time"])
    (entry,) = job["files"]
    assert set(entry) == set(RUCIO_POLL_FIELDS.split(","))
    assert entry["file_metadata"] == RUCIO_SUBMISSION["files"][0]["metadata"]
    assert entry["file_state"] == "SUBMITTED" and entry["start_time"] is None


def test_bulk_query_with_an_unknown_id_is_207_with_exact_statuses(fts):
    known = submit(fts, RUCIO_SUBMISSION).json()["job_id"]
    unknown = str(uuid.uuid4())
    response = fts.get(f"/fts3/jobs/{known},{unknown}", {"files": "file_state,file_metadata"})
    assert response.status_code == 207
    entries = response.json()
    assert [e["http_status"] for e in entries] == ["200 Ok", "404 Not Found"]
    assert entries[1]["job_id"] == unknown and "has been found" in entries[1]["http_message"]
    all_known = fts.get(f"/fts3/jobs/{known},{known}")
    assert all_known.status_code == 200 and isinstance(all_known.json(), list)


def test_single_unknown_job_is_404_object(fts):
    job_id = str(uuid.uuid4())
    response = fts.get(f"/fts3/jobs/{job_id}")
    assert response.status_code == 404
    assert response.json() == {
        "job_id": job_id,
        "http_status": "404 Not Found",
        "http_message": f"No job with the id {job_id} has been found",
    }
    assert fts.get(f"/fts3/jobs/{job_id}/files").status_code == 404


def test_files_listing_has_every_fts_key(fts):
    job_id = submit(fts, FTS3_CLIENT_SUBMISSION).json()["job_id"]
    (entry,) = fts.get(f"/fts3//jobs/{job_id}/files").json()
    for key in (
        "file_id",
        "file_index",
        "job_id",
        "source_se",
        "dest_se",
        "file_state",
        "source_surl",
        "dest_surl",
        "reason",
        "filesize",
        "checksum",
        "finish_time",
        "start_time",
        "tx_duration",
        "throughput",
        "file_metadata",
        "activity",
        "scitag",
        "staging_start",
        "staging_finished",
    ):
        assert key in entry
    assert entry["source_se"] == "davs://aus.example.org" and entry["file_metadata"] == {"obs_id": "obs-1"}
    assert fts.get(f"/fts3/jobs/{job_id}/dm").json() == []
    assert entry["throughput"] is None  # not started


def test_an_active_files_throughput_is_its_progress_so_far(fts):
    """As FTS3 reports from its performance markers: an active file's MiB/s is the progress the transfer
    service has seen at its destination over the time since the file started."""
    import datetime as dt

    from transfers.models import TransferFile

    job_id = submit(fts, FTS3_CLIENT_SUBMISSION).json()["job_id"]
    started = dt.datetime(2026, 11, 26, 12, 0, tzinfo=dt.UTC)
    TransferFile.objects.filter(job__job_id=job_id).update(
        state="ACTIVE",
        start_time=started,
        transferred_bytes=30 * 1024 * 1024,
        progress_at=started + dt.timedelta(seconds=10),
    )
    (entry,) = fts.get(f"/fts3/jobs/{job_id}/files").json()
    assert entry["file_state"] == "ACTIVE" and entry["throughput"] == 3.0


def test_deterministic_ids_and_duplicate_sid(fts):
    payload = body(RUCIO_SUBMISSION, id_generator="deterministic", sid="38fd33e511264f3c9a98eab11d7ec96f")
    first = submit(fts, payload)
    assert first.status_code == 200
    assert first.json()["job_id"] == str(deterministic_job_id("ska", "38fd33e511264f3c9a98eab11d7ec96f"))
    again = submit(fts, payload)
    assert again.status_code == 409 and "duplicated" in again.json()["message"]
    assert TransferJob.objects.count() == 1


def test_priority_change_and_cancel(fts):
    job_id = submit(fts, RUCIO_SUBMISSION).json()["job_id"]
    changed = fts.post(f"/fts3/jobs/{job_id}", {"params": {"priority": 5}}, content_type="application/json")
    assert changed.status_code == 200 and changed.json()["priority"] == 5
    bad = fts.post(f"/fts3/jobs/{job_id}", {"params": {"priority": 9}}, content_type="application/json")
    assert bad.status_code == 400
    cancelled = fts.delete(f"/fts3/jobs/{job_id}")
    assert cancelled.status_code == 200 and cancelled.json()["job_state"] == "CANCELED"
    assert TransferFile.objects.get(job__job_id=job_id).reason == "Job canceled by the user"
    again = fts.delete(f"/fts3/jobs/{job_id}")
    assert again.status_code == 200 and again.json()["http_status"] == "304 Not Modified"


def test_multihop_and_multi_source_jobs(fts):
    hop = body(RUCIO_SUBMISSION, multihop=True)
    hop["files"].append(
        {
            **hop["files"][0],
            "sources": hop["files"][0]["destinations"],
            "destinations": ["root://127.0.0.1:21096//rucio/feas/2f/94/file1.dat"],
        }
    )
    job = TransferJob.objects.get(job_id=submit(fts, hop).json()["job_id"])
    assert job.job_type == JobType.MULTIHOP
    assert list(job.files.order_by("file_index").values_list("state", flat=True)) == [
        FileState.SUBMITTED,
        FileState.NOT_USED,
    ]
    multi = body(RUCIO_SUBMISSION)
    multi["files"][0]["sources"] = ["root://a.example.org:1094//f", "root://b.example.org:1094//f"]
    job = TransferJob.objects.get(job_id=submit(fts, multi).json()["job_id"])
    assert job.job_type == JobType.MULTI_SOURCE
    assert sorted(job.files.values_list("file_index", "state")) == [
        (0, FileState.NOT_USED),
        (0, FileState.SUBMITTED),
    ]


@pytest.mark.parametrize(
    ("payload", "status", "message"),
    [
        ("not json", 400, "not valid JSON"),
        ({"files": []}, 400, "files must be a non-empty list"),
        ({"files": [{"sources": [], "destinations": ["root://b:1//x"]}]}, 400, "files[0].sources"),
        (
            {"files": [{"sources": ["root://a:1//x"], "destinations": ["root://b:1//x"], "filesize": -1}]},
            400,
            "filesize",
        ),
        (
            {
                "files": [
                    {"sources": ["root://a:1//x"], "destinations": ["root://b:1//x"], "checksum": "MD5:abc"}
                ]
            },
            400,
            "only ADLER32",
        ),
        (
            {"files": [{"sources": ["gsiftp://a/x"], "destinations": ["root://b:1//x"]}]},
            400,
            "files[0].source: 'gsiftp://a/x': the scheme 'gsiftp' is not served",
        ),
        (
            {"files": [{"sources": ["file:///etc/shadow"], "destinations": ["root://b:1//x"]}]},
            400,
            "files[0].source: 'file:///etc/shadow': the scheme 'file' is not served",
        ),
        (
            {"files": [{"sources": ["root://a:1//x"], "destinations": ["root://b:1//../../etc/x"]}]},
            400,
            "files[0].destination",
        ),
        (
            {"files": [{"sources": ["root://evil.example.org:1094//x"], "destinations": ["root://b:1//x"]}]},
            400,
            "no registered storage endpoint serves root on evil.example.org:1094",
        ),
        (body(RUCIO_SUBMISSION, bring_online=3600), 400, "no tape"),
        (body(RUCIO_SUBMISSION, copy_pin_lifetime=60), 400, "no tape"),
        (body(RUCIO_SUBMISSION, max_time_in_queue="soon"), 400, "max_time_in_queue"),
        (body(RUCIO_SUBMISSION, verify_checksum="sometimes"), 400, "verify_checksum"),
        (body(RUCIO_SUBMISSION, id_generator="deterministic"), 400, "sid is required"),
        ({"delete": ["root://a:1//x"], "files": []}, 405, "Deletion jobs"),
    ],
)
def test_malformed_submissions_are_refused_and_store_nothing(fts, payload, status, message):
    # A dict is sent as JSON, a string as it is.
    response = fts.post("/fts3/jobs", payload, content_type="application/json")
    assert response.status_code == status
    assert message in response.json()["message"]
    assert TransferJob.objects.count() == 0 and TransferFile.objects.count() == 0


def test_authentication(client, fts, scientist):
    assert client.get("/fts3/whoami").status_code == 401
    assert client.post("/fts3/jobs", RUCIO_SUBMISSION, content_type="application/json").status_code == 401
    stranger = Client(HTTP_AUTHORIZATION="Bearer not-a-token")
    assert stranger.get("/fts3/whoami").status_code == 401  # not a credential: authenticate
    # A scientist may not submit (the workers copy with the service's credentials), and does not see (or
    # cancel) an operator's job.
    job_id = submit(fts, RUCIO_SUBMISSION).json()["job_id"]
    token = issue(scientist, name="test", scope="fts3")[1]
    other = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    refused = submit(other, RUCIO_SUBMISSION)
    assert refused.status_code == 403 and "may not submit" in refused.json()["message"]
    assert TransferJob.objects.count() == 1
    assert other.get(f"/fts3/jobs/{job_id}").status_code == 404
    assert other.delete(f"/fts3/jobs/{job_id}").status_code == 404
    assert TransferJob.objects.get(job_id=job_id).state == JobState.SUBMITTED


def test_dates_are_fts_format(fts):
    job_id = submit(fts, RUCIO_SUBMISSION).json()["job_id"]
    stamp = fts.get(f"/fts3/jobs/{job_id}").json()["submit_time"]
    assert datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S")
