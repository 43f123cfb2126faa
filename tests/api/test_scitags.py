"""SciTags flow identifiers from the plan (transfers/scitags.py): every copy the platform submits carries its
activity's mark (the push loop's, a relay leg's, a job through the FTS3 endpoint without one of its own),
a client's own mark is kept, and the marks are published in the registry's format for Rucio. The registry
is the local network's example file, never fetched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.test import Client

from identity.tokens import issue
from localnet.scitags import ACTIVITIES, EXPERIMENT, REGISTRY
from tests.conftest import register_storage
from transfers import scitags
from transfers.embedded_transfertool import EmbeddedTransfertool
from transfers.models import TransferFile
from transfers.scitags import RegistryError, marks_from
from transfertools.interface import JobParams, TransferRequest

pytestmark = pytest.mark.django_db
EXPERIMENT_ID = 42  # the example registry's
PUSH, USER, RELAY = 2, 3, 6  # its activity ids of "telescope push", "scientist request", "relay leg"


@pytest.fixture
def marked(settings):  # type: ignore[no-untyped-def]
    settings.SRCNET_SCITAGS = {"REGISTRY": str(REGISTRY), "EXPERIMENT": EXPERIMENT, "ACTIVITIES": ACTIVITIES}
    scitags._cache.clear()
    yield
    scitags._cache.clear()


def test_the_registry_gives_each_activity_its_flow_id():
    marks = marks_from(json.loads(REGISTRY.read_text()), EXPERIMENT, ACTIVITIES)
    assert marks.flow_id("SKA Data Products") == EXPERIMENT_ID << 6 | PUSH == 2690
    assert marks.flow_id("SKA User Request") == EXPERIMENT_ID << 6 | USER
    assert marks.flow_id("SKA Data Products", relay=True) == EXPERIMENT_ID << 6 | RELAY
    assert marks.flow_id("default") == EXPERIMENT_ID << 6 | 1  # a registry name stands for itself
    assert marks.flow_id("nothing known") is None
    assert all(65 <= marks.flow_id(a) <= 65535 for a in ACTIVITIES if a != "relay")  # type: ignore[operator]


@pytest.mark.parametrize(
    ("registry", "experiment", "activities", "says"),
    [
        ({}, "ska-local", {}, "no 'experiments' list"),
        ({"experiments": []}, "ska-local", {}, "names no experiment 'ska-local'"),
        ({"experiments": [{"expName": "x", "expId": 1024}]}, "x", {}, "no id from 1 to 1023"),
        ({"experiments": [{"expName": "x", "expId": True}]}, "x", {}, "no id from 1 to 1023"),
        (
            {
                "experiments": [
                    {"expName": "x", "expId": 3, "activities": [{"activityName": "a", "activityId": 64}]}
                ]
            },
            "x",
            {"SKA Data Products": "a"},
            "maps 'SKA Data Products' to 'a', which the registry's experiment 'x' does not have",
        ),
    ],
)
def test_a_registry_that_cannot_mark_says_what_to_change(registry, experiment, activities, says):
    with pytest.raises(RegistryError, match=says):
        marks_from(registry, experiment, activities)


def test_an_unreadable_registry_marks_nothing_and_refuses_no_copy(settings, tmp_path: Path, caplog):
    broken = tmp_path / "registry.json"
    broken.write_text("{not json")
    settings.SRCNET_SCITAGS = {"REGISTRY": str(broken), "EXPERIMENT": EXPERIMENT, "ACTIVITIES": {}}
    scitags._cache.clear()
    assert scitags.flow_id("SKA Data Products") is None
    assert "no SciTags marking" in caplog.text and "cannot be read" in caplog.text
    scitags._cache.clear()


def test_the_push_loops_copies_and_relay_legs_carry_their_activitys_mark(marked):
    register_storage(
        "root://sdp.example.org:1094", "root://src.example.org:1094", "root://dc.example.org:1094"
    )
    tool = EmbeddedTransfertool()
    push = [TransferRequest("root://sdp.example.org:1094//f", "root://src.example.org:1094//f", 10, "")]
    tool.submit(push, JobParams(activity="SKA Data Products"))
    assert TransferFile.objects.get().scitag == EXPERIMENT_ID << 6 | PUSH
    legs = [
        TransferRequest("root://sdp.example.org:1094//g", "root://dc.example.org:1094//g", 10, ""),
        TransferRequest("root://dc.example.org:1094//g", "root://src.example.org:1094//g", 10, ""),
    ]
    tool.submit(legs, JobParams(activity="SKA Data Products", multihop=True))
    assert {f.scitag for f in TransferFile.objects.filter(source_surl__endswith="//g")} == {
        EXPERIMENT_ID << 6 | RELAY
    }


def test_the_fts3_endpoint_keeps_a_clients_mark_and_gives_one_to_a_copy_without(marked, operator):
    register_storage("root://a.example.org:1094", "root://b.example.org:1094")
    fts = Client(HTTP_AUTHORIZATION=f"Bearer {issue(operator, name='t', scope='fts3')[1]}")
    files: list[dict[str, object]] = [
        {
            "sources": ["root://a.example.org:1094//x"],
            "destinations": ["root://b.example.org:1094//x"],
            "scitag": 777,
            "activity": "SKA User Request",
        },
        {
            "sources": ["root://a.example.org:1094//y"],
            "destinations": ["root://b.example.org:1094//y"],
            "activity": "SKA User Request",
        },
    ]
    body = {"files": files, "params": {"job_metadata": {}}}
    answer = fts.post("/fts3/jobs", body, content_type="application/json")
    assert answer.status_code == 200, answer.content
    marks = {
        row[0]: row[1:]
        for row in TransferFile.objects.values_list("source_surl", "scitag", "scitag_from_client")
    }
    assert marks == {
        "root://a.example.org:1094//x": (777, True),  # the client's (Rucio's conveyor marks so)
        "root://a.example.org:1094//y": (EXPERIMENT_ID << 6 | USER, False),  # the endpoint's
    }


def test_the_marks_are_published_for_rucio_in_the_registrys_format(marked):
    published = Client().get("/api/scitags/")  # public, as the registry is
    assert published.status_code == 200
    body = published.json()
    again = marks_from(body, EXPERIMENT, {})
    assert again.flow_id("SKA Data Products") == EXPERIMENT_ID << 6 | PUSH
    assert again.flow_id("SKA User Request") == EXPERIMENT_ID << 6 | USER


def test_without_marking_configured_nothing_is_marked_or_published(settings):
    settings.SRCNET_SCITAGS = {"REGISTRY": "", "EXPERIMENT": "", "ACTIVITIES": {}}
    assert scitags.flow_id("SKA Data Products") is None
    assert Client().get("/api/scitags/").status_code == 404


def _ska_rucio_activities() -> list[str]:
    """The activities of the SKA Rucio policy (rucio/policy/ska_rucio_policy/schema.py), read from its
    source: the policy module imports the Rucio server, which only .venv-rucio has."""
    import ast

    source = Path(__file__).resolve().parents[2] / "rucio" / "policy" / "ska_rucio_policy" / "schema.py"
    for node in ast.parse(source.read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "SKA_ACTIVITIES":
            return list(ast.literal_eval(node.value))
    raise AssertionError(f"no SKA_ACTIVITIES in {source}")


def _as_rucio_reads(published: dict[str, object], exp_name: str) -> tuple[int | None, dict[str, int]]:
    """The ids Rucio 41.5.1's FTS3 transfertool takes from its [packet-marking] fetch_url (``_scitags_ids``):
    the experiment named ``exp_name``, each activity with a name and an id."""
    for experiment in published.get("experiments", []):  # type: ignore[attr-defined]
        if experiment.get("expName") == exp_name:
            ids = {a["activityName"]: int(a["activityId"]) for a in experiment.get("activities", [])}
            return experiment.get("expId"), {k: v for k, v in ids.items() if k and v}
    return None, {}


@pytest.mark.parametrize("urlconf", ["srcnet.urls", "srcnet.fts3_urls"])
def test_rucio_marks_each_ska_activity_as_the_platform_does(marked, settings, urlconf):
    """What Rucio's conveyor reads from the platform's marks (the control plane's /api/scitags/, or the FTS3
    service's, where the local Rucio reads them): for every activity of the SKA Rucio policy, the scitag it
    sends with each file (``expId << 6 | activityId``) is the one the platform gives that activity."""
    settings.ROOT_URLCONF = urlconf
    published = Client().get("/api/scitags/")
    assert published.status_code == 200, published.content
    exp_id, ids = _as_rucio_reads(published.json(), EXPERIMENT)
    assert exp_id == EXPERIMENT_ID
    activities = _ska_rucio_activities()
    assert activities and set(activities) <= set(ACTIVITIES), set(activities) - set(ACTIVITIES)
    for activity in activities:
        assert exp_id << 6 | ids[activity] == scitags.flow_id(activity), activity
