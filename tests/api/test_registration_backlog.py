"""A burst of registrations: past ``SRCNET_REGISTRATION_BACKLOG`` products waiting at a telescope's SDP the
API answers 429 with a ``Retry-After`` from the recent drain rate and writes nothing; a batch registers up to
1 000 products all or none (issue 33, "Bad input": nothing is lost, the client sends again)."""

from __future__ import annotations

from typing import Any

import pytest

from replicas import backlog
from replicas.choices import ProductState, ReplicaState
from replicas.lifecycle import new_replica
from replicas.models import DataProduct, ProductFile
from topology.models import StorageEndpoint

pytestmark = pytest.mark.django_db


def product(name: str, telescope: str = "SKA1-Low") -> dict[str, Any]:
    return {
        "scope": "ska",
        "name": name,
        "telescope": telescope,
        "files": [{"name": f"{name}.ms", "size_bytes": 1000, "adler32": "0cc737eb"}],
    }


@pytest.fixture(autouse=True)
def bound(settings):  # type: ignore[no-untyped-def]
    settings.SRCNET_REGISTRATION_BACKLOG = 3
    backlog._counts.clear()  # the per-process count of an earlier test's rows
    yield
    backlog._counts.clear()


def hand_on(name: str) -> None:
    """The push loop hands a waiting product on: its first copy placed at an SRC, now."""
    made = DataProduct.objects.get(name=name)
    made.state = ProductState.PLACING
    made.save(update_fields=["state"])
    new_replica(
        product=made, endpoint=StorageEndpoint.objects.get(name="UKSRC_DISK"), state=ReplicaState.COPYING
    )
    backlog._counts.clear()  # as a second later


def test_past_the_bound_a_registration_waits_and_nothing_is_written(operator_client, reference_topology):
    for n in range(3):
        assert (
            operator_client.post("/api/replicas/products/", product(f"p{n}"), format="json").status_code
            == 201
        )
    refused = operator_client.post("/api/replicas/products/", product("p3"), format="json")
    assert refused.status_code == 429, refused.json()
    # Nothing has left the SDP yet: a minute.
    assert refused["Retry-After"] == "60"
    assert "3 products wait at SKA1-Low's SDP" in refused.json()["detail"]
    assert not DataProduct.objects.filter(name="p3").exists()
    assert not ProductFile.objects.filter(name="p3.ms").exists()
    # Another telescope's queue is its own.
    other = operator_client.post("/api/replicas/products/", product("m0", "SKA1-Mid"), format="json")
    assert other.status_code == 201


def test_the_wait_is_the_excess_over_the_recent_drain_rate(operator_client, reference_topology):
    for n in range(5):
        assert operator_client.post(
            "/api/replicas/products/", product(f"p{n}"), format="json"
        ).status_code in (
            201,
            429,
        )
    hand_on("p0")
    hand_on("p1")  # two left in the last 10 minutes: 1 every 300 s
    assert operator_client.post("/api/replicas/products/", product("p3"), format="json").status_code == 201
    assert operator_client.post("/api/replicas/products/", product("p4"), format="json").status_code == 201
    refused = operator_client.post("/api/replicas/products/", product("p5"), format="json")
    assert refused.status_code == 429 and refused["Retry-After"] == "300"
    batch = operator_client.post(
        "/api/replicas/products/batch/", {"products": [product("p6"), product("p7")]}, format="json"
    )
    assert batch.status_code == 429 and batch["Retry-After"] == "600"  # two over: twice as long
    assert not DataProduct.objects.filter(name__in=["p5", "p6", "p7"]).exists()


def test_a_batch_registers_all_or_none(operator_client, reference_topology, settings):
    settings.SRCNET_REGISTRATION_BACKLOG = 1000
    made = operator_client.post(
        "/api/replicas/products/batch/",
        {"products": [product("b0"), product("b1"), product("b2", "SKA1-Mid")]},
        format="json",
    )
    assert made.status_code == 201, made.json()
    assert [r["did"] for r in made.json()["registered"]] == ["ska:b0", "ska:b1", "ska:b2"]
    assert DataProduct.objects.get(name="b2").replicas.get().endpoint.name == "SKA1-MID_SDP"
    before = DataProduct.objects.count()
    bad = {**product("b4"), "files": []}
    answers = {
        "bad field": ({"products": [product("b3"), bad]}, "products[1].files"),
        "twice": ({"products": [product("b5"), product("b5")]}, "products[1].name"),
        "exists": ({"products": [product("b6"), product("b0")]}, "products[1].name"),
        "none": ({"products": []}, "products"),
        "not a list": ({"products": "b7"}, "products"),
        "too many": ({"products": [product(f"x{n}") for n in range(1001)]}, "products"),
    }
    for case, (body, field) in answers.items():
        answer = operator_client.post("/api/replicas/products/batch/", body, format="json")
        assert answer.status_code == 400 and field in answer.json(), (case, answer.json())
    assert DataProduct.objects.count() == before  # none of them written


def test_a_scientist_may_not_register(scientist_client, reference_topology):  # type: ignore[no-untyped-def]
    answer = scientist_client.post(
        "/api/replicas/products/batch/", {"products": [product("s")]}, format="json"
    )
    assert answer.status_code == 403
