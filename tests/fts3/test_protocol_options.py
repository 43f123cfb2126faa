"""FTS3 REST conformance of single options, on the recorded Rucio body: scitag, retry_delay,
max_time_in_queue suffixes, and every verify_checksum variant (no workers needed)."""

from __future__ import annotations

import calendar

import pytest
from django.test import Client

from transfers.models import TransferFile, TransferJob

from .recorded import RUCIO_SUBMISSION, body

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("recorded_storage")]


def submit(client: Client, payload: dict):  # type: ignore[no-untyped-def, type-arg]
    return client.post("/fts3/jobs", payload, content_type="application/json")


def with_scitag(value):  # type: ignore[no-untyped-def]
    payload = body(RUCIO_SUBMISSION)
    payload["files"][0]["scitag"] = value
    return payload


@pytest.mark.parametrize("scitag", [65, 1234, 65535])
def test_scitag_is_stored_and_echoed(fts, scitag):
    response = submit(fts, with_scitag(scitag))
    assert response.status_code == 200, response.content
    job_id = response.json()["job_id"]
    assert TransferFile.objects.get(job__job_id=job_id).scitag == scitag
    (listed,) = fts.get(f"/fts3/jobs/{job_id}/files").json()
    assert listed["scitag"] == scitag
    polled = fts.get(f"/fts3/jobs/{job_id}", {"files": "scitag,file_state"}).json()
    assert polled["files"] == [{"scitag": scitag, "file_state": "SUBMITTED"}]


@pytest.mark.parametrize("scitag", [64, 0, -1, 65536, "65", True])
def test_scitag_outside_65_to_65535_is_refused(fts, scitag):
    response = submit(fts, with_scitag(scitag))
    assert response.status_code == 400
    assert "files[0].scitag must be an integer from 65 to 65535" in response.json()["message"]
    assert TransferJob.objects.count() == 0


def test_retry_delay_is_stored_and_echoed(fts):
    job_id = submit(fts, body(RUCIO_SUBMISSION, retry=3, retry_delay=45)).json()["job_id"]
    job = TransferJob.objects.get(job_id=job_id)
    assert job.retry == 3 and job.retry_delay == 45
    polled = fts.get(f"/fts3/jobs/{job_id}").json()
    assert polled["retry"] == 3 and polled["retry_delay"] == 45


@pytest.mark.parametrize(
    ("value", "seconds"),
    [(2, 2 * 3600), ("2", 2 * 3600), ("30s", 30), ("15m", 900), ("6h", 6 * 3600), ("2d", 2 * 86400)],
)
def test_max_time_in_queue_takes_hours_or_a_suffix(fts, value, seconds):
    job_id = submit(fts, body(RUCIO_SUBMISSION, max_time_in_queue=value)).json()["job_id"]
    job = TransferJob.objects.get(job_id=job_id)
    assert job.expires is not None
    assert abs((job.expires - job.created).total_seconds() - seconds) < 5
    # Echoed as FTS3 does: the expiry as a Unix time.
    assert fts.get(f"/fts3/jobs/{job_id}").json()["max_time_in_queue"] == calendar.timegm(
        job.expires.utctimetuple()
    )


@pytest.mark.parametrize(("value"), ["2w", "-1", "1.5h", "h"])
def test_max_time_in_queue_refuses_other_units(fts, value):
    response = submit(fts, body(RUCIO_SUBMISSION, max_time_in_queue=value))
    assert response.status_code == 400 and "max_time_in_queue" in response.json()["message"]


@pytest.mark.parametrize(
    ("value", "with_checksum", "stored", "flag"),
    [
        (True, True, "both", "b"),
        (False, True, "target", "t"),  # FTS3: false with a checksum given checks the destination
        (False, False, "none", "n"),
        (None, True, "target", "t"),
        ("both", True, "both", "b"),
        ("source", True, "source", "s"),
        ("target", True, "target", "t"),
        ("none", True, "none", "n"),
        ("SOURCE", True, "source", "s"),
    ],
)
def test_verify_checksum_variants(fts, value, with_checksum, stored, flag):
    payload = body(RUCIO_SUBMISSION, verify_checksum=value)
    if not with_checksum:
        payload["files"][0].pop("checksum", None)
    response = submit(fts, payload)
    assert response.status_code == 200, response.content
    job_id = response.json()["job_id"]
    assert TransferJob.objects.get(job_id=job_id).verify_checksum == stored
    assert fts.get(f"/fts3/jobs/{job_id}").json()["verify_checksum"] == flag
