"""The scheduler's API: plan preview (what will move when, and why), cycles, measurements, simulations."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from replicas.services import FileSpec, register_product
from schedulers.models import PathMeasurement, PushCycle, Simulation
from schedulers.services import run_requested_simulation
from topology.models import Telescope

pytestmark = pytest.mark.django_db


def test_plan_preview_explains_every_leg_and_submits_nothing(operator_client, reference_topology):
    for priority in (2, 5):
        register_product(
            scope="ska",
            name=f"obs-{priority}",
            telescope=Telescope.objects.get(name="SKA1-Mid"),
            priority=priority,
            files=[FileSpec("f.ms", 10**10, "0cc737eb")],
        )
    with CaptureQueriesContext(connection) as queries:
        body = operator_client.get("/api/schedulers/plan/").json()
    assert body["products_queued"] == 2 and len(body["legs"]) == 2
    first = body["legs"][0]
    assert first["product"] == "ska:obs-5" and first["source"] == "SKA1-Mid" and first["role"] == "primary"
    assert first["streams"] >= 1 and first["files"] >= 1 and first["links"][0] == "mid-access"
    assert {leg["due_now"] for leg in body["legs"]} == {True}  # two lanes, free: both could start now
    # A preview records nothing: no write at all in its request. (Not a count of PushCycle rows: a Celery
    # worker's beat started by another test of this process runs cycles of its own on the test database,
    # and a whole run saw two of them here.)
    writes = [
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))
    ]
    assert not [w for w in writes if "identity_apitoken" not in w], writes  # the token's last use aside


def test_empty_queue_previews_nothing(operator_client, reference_topology):
    assert operator_client.get("/api/schedulers/plan/").json() == {
        "products_queued": 0,
        "legs": [],
        "events": [],
    }


def test_measurements_and_cycles_are_listed(operator_client):
    PathMeasurement.objects.create(
        source="SKA1-Low", destination="UKSRC", streams=4, bytes=10**9, seconds=2.0, throughput_bps=4e9
    )
    PushCycle.objects.create(products_queued=3, legs_planned=3, legs_submitted=1)
    assert operator_client.get("/api/schedulers/measurements/", {"destination": "UKSRC"}).json()["count"] == 1
    assert operator_client.get("/api/schedulers/cycles/").json()["results"][0]["legs_submitted"] == 1


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"scenario": "warp"}, "scenario"),
        ({"days": 0}, "days"),
        ({"days": 30}, "days"),
        ({"topology": "mars"}, "topology"),
    ],
)
def test_bad_simulation_requests_are_400(operator_client, payload, field):
    response = operator_client.post("/api/schedulers/simulations/", payload, format="json")
    assert response.status_code == 400 and field in response.json()
    assert Simulation.objects.count() == 0


def test_a_simulation_runs_and_serves_its_report(operator_client, scientist_client, settings, tmp_path):
    settings.SRCNET_REPORTS_DIR = tmp_path
    response = operator_client.post(
        "/api/schedulers/simulations/",
        {"scenario": "one_replica", "days": 0.05, "topology": "reference", "with_lp": False},
        format="json",
    )
    assert response.status_code == 201, response.json()
    simulation_id = response.json()["id"]
    # In this rolled-back test the worker's on-commit hook never fires: run it as the worker would.
    assert run_requested_simulation(simulation_id) == "done"
    assert run_requested_simulation(simulation_id) == "not queued"  # a redelivered message does nothing
    body = operator_client.get(f"/api/schedulers/simulations/{simulation_id}/").json()
    assert body["state"] == "done" and body["summary"][0]["name"] == "one_replica"
    assert body["summary"][0]["products"] > 0
    assert {"report.md", "summary.json"} <= set(body["report_files"])
    report = operator_client.get(f"/api/schedulers/simulations/{simulation_id}/files/report.md/")
    assert report.status_code == 200 and b"one_replica" in b"".join(report.streaming_content)
    assert (
        operator_client.get(f"/api/schedulers/simulations/{simulation_id}/files/nope.md/").status_code == 404
    )
    assert scientist_client.post("/api/schedulers/simulations/", {}, format="json").status_code == 403


def test_measurements_can_be_recorded_for_existing_paths_only(
    operator_client, scientist_client, reference_topology
):
    good = {
        "source": "SKA1-Low",
        "destination": "UKSRC",
        "streams": 4,
        "bytes": 10**9,
        "seconds": 10.0,
        "throughput_bps": 8e8,
        "rtt_ms": 223.1,
    }
    assert operator_client.post("/api/schedulers/measurements/", good, format="json").status_code == 201
    bad = operator_client.post(
        "/api/schedulers/measurements/", {**good, "destination": "Atlantis"}, format="json"
    )
    assert bad.status_code == 400 and "destination" in bad.json()
    assert (
        operator_client.post(
            "/api/schedulers/measurements/", {**good, "streams": 0}, format="json"
        ).status_code
        == 400
    )
    assert scientist_client.post("/api/schedulers/measurements/", good, format="json").status_code == 403
    assert PathMeasurement.objects.count() == 1
