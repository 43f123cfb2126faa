"""Products, policies and transfer jobs over the REST API (no workers: these check bookkeeping only)."""

import pytest

from replicas.models import DataProduct, Replica
from tests.conftest import register_storage
from transfers.models import TransferFile, TransferJob

pytestmark = pytest.mark.django_db

PRODUCT = {
    "scope": "ska",
    "name": "obs-1",
    "telescope": "SKA1-Low",
    "priority": 4,
    "files": [
        {"name": "a.ms", "size_bytes": 1000, "adler32": "0cc737eb"},
        {"name": "b.ms", "size_bytes": 2000, "adler32": "1cc737eb"},
    ],
}


def test_register_and_read_a_product(operator_client, reference_topology):
    response = operator_client.post("/api/replicas/products/", PRODUCT, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["did"] == "ska:obs-1" and body["source"] == "SKA1-LOW_SDP" and body["size_bytes"] == 3000
    assert [r["endpoint"] for r in body["replicas"]] == ["SKA1-LOW_SDP"]
    listed = operator_client.get("/api/replicas/products/", {"telescope": "SKA1-Low", "q": "ska:obs"}).json()
    assert listed["count"] == 1


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"files": []}, "files"),
        ({"files": [{"name": "a", "size_bytes": -1, "adler32": "0cc737eb"}]}, "files"),
        ({"files": [{"name": "a", "size_bytes": 1, "adler32": "zz"}]}, "files"),
        ({"files": [{"name": "a", "size_bytes": 1, "adler32": "0cc737eb"}] * 2}, "files[1].name"),
        ({"telescope": "Hubble"}, "telescope"),
        ({"telescope": "SKA1\x00-Low"}, "telescope"),  # the fuzzer's: a NUL PostgreSQL cannot take
        ({"project": "AA\x0001"}, "project"),
        ({"scope": "bad scope!"}, "scope"),
        ({"priority": 9}, "priority"),
    ],
)
def test_bad_products_are_rejected_whole(operator_client, reference_topology, change, field):
    response = operator_client.post("/api/replicas/products/", {**PRODUCT, **change}, format="json")
    assert response.status_code == 400
    assert field in response.json(), response.json()
    assert DataProduct.objects.count() == 0 and Replica.objects.count() == 0


def test_duplicate_product_is_400(operator_client, reference_topology):
    assert operator_client.post("/api/replicas/products/", PRODUCT, format="json").status_code == 201
    response = operator_client.post("/api/replicas/products/", PRODUCT, format="json")
    assert response.status_code == 400
    assert DataProduct.objects.count() == 1


def test_push_places_by_policy_and_submits_one_job(
    operator_client, reference_topology, django_capture_on_commit_callbacks
):
    product_id = operator_client.post("/api/replicas/products/", PRODUCT, format="json").json()["id"]
    response = operator_client.post(f"/api/replicas/products/{product_id}/push/")
    assert response.status_code == 200, response.json()
    (replica,) = response.json()
    assert replica["state"] == "copying" and replica["policy"] == "SKA1-Low-1-replica-by-share"
    job = TransferJob.objects.get()
    assert job.metadata["product"] == "ska:obs-1" and job.priority == 4
    files = list(job.files.order_by("file_index"))
    assert [f.checksum for f in files] == ["ADLER32:0cc737eb", "ADLER32:1cc737eb"]
    assert all(
        f.dest_surl.endswith(f"/srcnet/ska/obs-1/{n}") for f, n in zip(files, ["a.ms", "b.ms"], strict=True)
    )
    # Pushing again changes nothing.
    again = operator_client.post(f"/api/replicas/products/{product_id}/push/")
    assert again.status_code == 200 and TransferJob.objects.count() == 1


def test_policy_with_explicit_shares(operator_client, reference_topology):
    response = operator_client.post(
        "/api/replicas/policies/",
        {
            "name": "low-two-sites",
            "telescope": "SKA1-Low",
            "is_active": False,
            "shares": [
                {"destination": "UKSRC_DISK", "weight": 3},
                {"destination": "AUSRC_DISK", "weight": 1},
            ],
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    assert response.json()["effective_weights"] == {"UKSRC_DISK": 3.0, "AUSRC_DISK": 1.0}
    bad = operator_client.post(
        "/api/replicas/policies/",
        {
            "name": "bad",
            "telescope": "SKA1-Low",
            "is_active": False,
            "shares": [{"destination": "SKA1-MID_SDP", "weight": 1}],
        },
        format="json",
    )
    assert bad.status_code == 400 and "shares[0].destination" in bad.json()


def test_submit_and_cancel_a_transfer_job(operator_client):
    register_storage("root://a.example.org:1094", "davs://b.example.org:443")
    payload = {
        "priority": 5,
        "file_requests": [
            {
                "source": "root://a.example.org:1094//data/f",
                "destination": "davs://b.example.org:443/data/f",
                "filesize": 10,
                "checksum": "ADLER32:0cc737eb",
            }
        ],
    }
    response = operator_client.post("/api/transfers/jobs/", payload, format="json")
    assert response.status_code == 201, response.json()
    job_id = response.json()["job_id"]
    assert response.json()["files"][0]["source_se"] == "root://a.example.org:1094"
    cancelled = operator_client.post(f"/api/transfers/jobs/{job_id}/cancel/")
    assert cancelled.status_code == 200 and cancelled.json()["state"] == "CANCELED"
    assert cancelled.json()["files"][0]["state"] == "CANCELED"


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"file_requests": []}, "files"),
        (
            {"file_requests": [{"source": "ftp://x/y", "destination": "root://b:1//y"}]},
            "files[0].source",
        ),
        (
            {"file_requests": [{"source": "file:///etc/shadow", "destination": "root://b:1//y"}]},
            "files[0].source",
        ),
        (
            {"file_requests": [{"source": "root://a:1//y", "destination": "root://elsewhere:1//y"}]},
            "files[0].destination",
        ),
        (
            {
                "file_requests": [
                    {"source": "root://a:1//y", "destination": "root://b:1//y", "checksum": "MD5:1"}
                ]
            },
            "files[0].checksum",
        ),
        (
            {"priority": 0, "file_requests": [{"source": "root://a:1//y", "destination": "root://b:1//y"}]},
            "priority",
        ),
    ],
)
def test_bad_jobs_are_400_and_store_nothing(operator_client, payload, field):
    register_storage("root://a:1", "root://b:1")
    response = operator_client.post("/api/transfers/jobs/", payload, format="json")
    assert response.status_code == 400
    assert field in response.json(), response.json()
    assert TransferJob.objects.count() == 0 and TransferFile.objects.count() == 0


def test_scientists_cannot_submit_transfer_jobs(scientist_client):
    register_storage("root://a:1", "root://b:1")
    payload = {"file_requests": [{"source": "root://a:1//y", "destination": "root://b:1//y"}]}
    assert scientist_client.post("/api/transfers/jobs/", payload, format="json").status_code == 403
    assert TransferJob.objects.count() == 0


def test_unknown_job_is_404(operator_client):
    assert operator_client.get("/api/transfers/jobs/00000000-0000-0000-0000-000000000000/").status_code == 404


@pytest.mark.parametrize(
    ("value", "status"),
    [
        # Python accepts the offset, PostgreSQL would not: the filter hands the database UTC.
        ("0405-04-13T00:56:40.897+23:43", 200),
        # Before year 1 once in UTC: out of range, a 400 naming the parameter.
        ("0001-01-01T00:00:00+23:00", 400),
        ("yesterday", 400),
    ],
)
def test_time_filters_take_any_offset_and_refuse_what_is_out_of_range(scientist_client, value, status):
    for url in ("/api/replicas/products/", "/api/transfers/jobs/"):
        response = scientist_client.get(url, {"created_after": value})
        assert response.status_code == status, (url, response.content[:200])
        if status == 400:
            assert "created_after" in response.json()
