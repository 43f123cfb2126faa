"""The FTS3 endpoint fuzzed from the bodies Rucio and the fts3 client really send, with mutated fields:
other types, huge and unicode strings, '..' in paths, thousands of files. Every answer is a 200 (the job is
stored, all of it, on registered storage only) or a 4xx with the reason (nothing stored); never a server
error, and the service keeps answering."""

from __future__ import annotations

import copy
import json
import os
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from topology.services.storage_urls import StorageRegistry
from transfers.models import TransferFile, TransferJob

from .recorded import FTS3_CLIENT_SUBMISSION, RUCIO_SUBMISSION

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("recorded_storage")]
EXAMPLES = int(os.environ.get("SRCNET_FUZZ_EXAMPLES", "150"))
TEMPLATES = (RUCIO_SUBMISSION, FTS3_CLIENT_SUBMISSION)
GOOD_URLS = ["root://127.0.0.1:21094//rucio/f", "davs://aus.example.org/ska/f1", "root://a:1//x"]

json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(max_size=40),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=8).map(lambda s: s * 2000),
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=8,
)
hostile_url = st.one_of(
    st.sampled_from(GOOD_URLS).map(lambda u: u.replace("/f", "/../../etc/shadow")),
    st.sampled_from(GOOD_URLS).map(lambda u: u + "/%2e%2e/x"),
    st.sampled_from(GOOD_URLS).flatmap(lambda u: st.text(min_size=1, max_size=20).map(lambda t: u + t)),
    st.sampled_from(["file:///etc/shadow", "root://evil.example.org//x", "davs://aus.example.org:1/ska/x"]),
    st.text(max_size=60),
)


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:  # type: ignore[type-arg]
    """Every place in a JSON document a mutation can hit."""
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += _paths(item, (*prefix, index))
    return out


def _set(document: Any, path: tuple, value: Any) -> Any:  # type: ignore[type-arg]
    if not path:
        return value
    target = document
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return document


@st.composite
def mutated_submission(draw: st.DrawFn) -> Any:
    body = copy.deepcopy(draw(st.sampled_from(TEMPLATES)))
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        path = draw(st.sampled_from(_paths(body)))
        is_url = len(path) >= 3 and path[-2] in ("sources", "destinations")
        body = _set(body, path, draw(hostile_url if is_url else json_value))
    if (
        draw(st.booleans())
        and isinstance(body, dict)
        and isinstance(body.get("files"), list)
        and body["files"]
    ):
        # Many copies of a (possibly mutated) file entry.
        body["files"] = body["files"] * draw(st.integers(min_value=2, max_value=300))
    return body


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(body=mutated_submission())
def test_a_mutated_submission_is_stored_whole_or_refused_with_the_reason(fts, body):
    jobs, files = TransferJob.objects.count(), TransferFile.objects.count()
    response = fts.post("/fts3/jobs", json.dumps(body), content_type="application/json")
    assert response.status_code in (200, 400, 405, 409), response.content[:300]
    answer = response.json()
    if response.status_code == 200:
        job = TransferJob.objects.get(job_id=answer["job_id"])
        registry = StorageRegistry.load()
        for row in job.files.all():
            registry.resolve(row.source_surl)
            registry.resolve(row.dest_surl)
        assert TransferJob.objects.count() == jobs + 1
    else:
        assert answer["message"] and len(answer["message"]) < 2000
        assert (TransferJob.objects.count(), TransferFile.objects.count()) == (jobs, files)


def test_ten_thousand_files_are_taken_whole_and_one_bad_url_refuses_them_all(fts):
    entry = copy.deepcopy(RUCIO_SUBMISSION["files"][0])
    many = {**RUCIO_SUBMISSION, "files": []}
    for i in range(10_000):
        f = copy.deepcopy(entry)
        f["sources"] = [f"root://127.0.0.1:21094//rucio/feas/{i}"]
        f["destinations"] = [f"root://127.0.0.1:21095//rucio/feas/{i}"]
        many["files"].append(f)
    bad = copy.deepcopy(many)
    bad["files"][9_999]["destinations"] = ["root://127.0.0.1:21095//rucio/../../etc/cron.d/x"]
    refused = fts.post("/fts3/jobs", json.dumps(bad), content_type="application/json")
    assert refused.status_code == 400 and refused.json()["message"].startswith("files[9999].destination")
    assert TransferJob.objects.count() == 0 and TransferFile.objects.count() == 0
    taken = fts.post("/fts3/jobs", json.dumps(many), content_type="application/json")
    assert taken.status_code == 200
    assert TransferFile.objects.filter(job__job_id=taken.json()["job_id"]).count() == 10_000


def test_a_body_that_would_expand_to_millions_of_copies_is_refused_naming_the_fields(fts):
    # About 250 kB of JSON: 2 000 sources x 2 000 destinations of one file would be 4 million rows.
    entry = copy.deepcopy(RUCIO_SUBMISSION["files"][0])
    entry["sources"] = [f"root://127.0.0.1:21094//rucio/feas/s{i}" for i in range(2_000)]
    entry["destinations"] = [f"root://127.0.0.1:21095//rucio/feas/d{i}" for i in range(2_000)]
    wide = {**RUCIO_SUBMISSION, "files": [entry]}
    assert len(json.dumps(wide)) < 300_000
    started = time.monotonic()
    refused = fts.post("/fts3/jobs", json.dumps(wide), content_type="application/json")
    assert refused.status_code == 400
    assert refused.json()["message"].startswith("files[0].sources x files[0].destinations: 2000 x 2000")
    assert (
        time.monotonic() - started < 10
    )  # refused before anything is expanded (4 million rows took minutes)
    # One more file than a job may hold, each a single copy: refused whole, naming the limit.
    many = {**RUCIO_SUBMISSION, "files": []}
    for i in range(10_001):
        f = copy.deepcopy(RUCIO_SUBMISSION["files"][0])
        f["sources"] = [f"root://127.0.0.1:21094//rucio/feas/{i}"]
        f["destinations"] = [f"root://127.0.0.1:21095//rucio/feas/{i}"]
        many["files"].append(f)
    too_many = fts.post("/fts3/jobs", json.dumps(many), content_type="application/json")
    assert too_many.status_code == 400
    assert too_many.json()["message"].startswith("files: more than 10000 transfers in one job")
    assert TransferJob.objects.count() == 0 and TransferFile.objects.count() == 0


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"null",
        b"[]",
        b'"files"',
        b"{" * 5000,
        b'{"files": [' + b"[" * 3000 + b"]" * 3000 + b"]}",
        '{"files": "\u202e\ufeff"}'.encode(),
        b"\xff\xfe\x00{",
        json.dumps(
            {"files": [{"sources": ["root://a:1//" + "x" * 1_000_000], "destinations": ["root://b:1//x"]}]}
        ).encode(),
    ],
)
def test_bodies_that_are_not_a_submission_are_400_and_the_service_keeps_answering(fts, raw):
    response = fts.post("/fts3/jobs", raw, content_type="application/json")
    assert response.status_code == 400, response.content[:300]
    assert response.json()["message"]
    assert TransferJob.objects.count() == 0
    assert fts.get("/fts3/whoami").status_code == 200
