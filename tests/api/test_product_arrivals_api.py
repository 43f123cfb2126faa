"""Each pending replica's own predicted arrival in the product API (issue 15): a first copy's is the push
loop's prediction on its product, a second copy's waits for its upstream and drains its lane."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from replicas.models import DataProduct, Replica
from schedulers.models import PathMeasurement
from tests.factories import product_at_sdp
from topology.models import StorageEndpoint

pytestmark = pytest.mark.django_db

GB = 10**9
FIRST_NOTE = "moving on SKA1-Low -> AUSRC since this cycle: 4 stream(s) x 1 file(s)"


def _product(name: str, predicted_in_s: float | None = None) -> DataProduct:
    """A 1 GB product at SKA1-Low's SDP; with ``predicted_in_s``, the push loop's prediction of its first
    copy's arrival (as a cycle records it)."""
    product = product_at_sdp(name, sizes=[GB])
    if predicted_in_s is not None:
        DataProduct.objects.filter(pk=product.pk).update(
            predicted_arrival=dt.datetime.now(dt.UTC) + dt.timedelta(seconds=predicted_in_s),
            arrival_note=FIRST_NOTE,
        )
        product.refresh_from_db()
    return product


def _at(text: str | None) -> dt.datetime:
    assert text is not None
    return dt.datetime.fromisoformat(text)


def _by_endpoint(body: dict) -> dict[str, dict]:  # type: ignore[type-arg]
    return {r["endpoint"]: r for r in body["replicas"]}


def test_each_pending_replica_has_its_own_predicted_arrival_and_note(operator_client, reference_topology):
    au, uk = (StorageEndpoint.objects.get(name=n) for n in ("AUSRC_DISK", "UKSRC_DISK"))
    # AUSRC -> UKSRC delivered 800 Mbit/s (100 MB/s) lately: the second copy's 1 GB takes 10 s.
    PathMeasurement.objects.create(
        source="AUSRC", destination="UKSRC", streams=4, bytes=10**9, seconds=10, throughput_bps=800e6
    )
    product = _product("obs-arrivals", predicted_in_s=60)
    first = Replica.objects.create(product=product, endpoint=au, state="copying")
    second = Replica.objects.create(product=product, endpoint=uk, state="planned", upstream=first)
    predicted = product.predicted_arrival
    assert predicted is not None

    detail = operator_client.get(f"/api/replicas/products/{product.pk}/")
    assert detail.status_code == 200, detail.json()
    listed = operator_client.get("/api/replicas/products/", {"q": "ska:obs-arrivals"})
    assert listed.status_code == 200 and listed.json()["count"] == 1
    for body in (detail.json(), listed.json()["results"][0]):
        replicas = _by_endpoint(body)
        assert set(replicas) == {"SKA1-LOW_SDP", "AUSRC_DISK", "UKSRC_DISK"}
        # The product-level fields stay the first copy's.
        assert _at(body["predicted_arrival"]) == predicted and body["arrival_note"] == FIRST_NOTE
        # The first copy: the push loop's prediction on its product, in the same format.
        at_au = replicas["AUSRC_DISK"]
        assert at_au["id"] == first.pk and at_au["state"] == "copying"
        assert at_au["predicted_arrival"] == body["predicted_arrival"]
        assert at_au["arrival_note"] == FIRST_NOTE
        # The second copy: after its upstream's arrival, plus its own 1 GB at 100 MB/s.
        at_uk = replicas["UKSRC_DISK"]
        assert at_uk["id"] == second.pk and at_uk["upstream"] == "AUSRC_DISK"
        assert _at(at_uk["predicted_arrival"]) == pytest.approx(
            predicted + dt.timedelta(seconds=10), abs=dt.timedelta(milliseconds=1)
        )
        assert _at(at_uk["predicted_arrival"]) > _at(at_au["predicted_arrival"])
        assert at_uk["arrival_note"] == (
            f"second copy waits for AUSRC_DISK (predicted {predicted:%H:%M:%S}) on AUSRC -> UKSRC: "
            "0 copy(ies) ahead on the lane, 1000 MB to go up to this copy; "
            "the lane delivers 800 Mbit/s lately"
        )
        # The SDP's copy is there already: nothing to predict.
        at_sdp = replicas["SKA1-LOW_SDP"]
        assert at_sdp["state"] == "available"
        assert at_sdp["predicted_arrival"] is None and at_sdp["arrival_note"] == ""

    # Once the first copy is there the second copy goes now: 10 s from the request, not from the prediction.
    Replica.objects.filter(pk=first.pk).update(state="available")
    before = dt.datetime.now(dt.UTC)
    replicas = _by_endpoint(operator_client.get(f"/api/replicas/products/{product.pk}/").json())
    assert (
        replicas["AUSRC_DISK"]["predicted_arrival"] is None and replicas["AUSRC_DISK"]["arrival_note"] == ""
    )
    now_uk = _at(replicas["UKSRC_DISK"]["predicted_arrival"])
    assert before + dt.timedelta(seconds=10) <= now_uk <= dt.datetime.now(dt.UTC) + dt.timedelta(seconds=10)
    assert replicas["UKSRC_DISK"]["arrival_note"].startswith("second copy from AUSRC_DISK on AUSRC -> UKSRC")


def test_a_first_copy_not_planned_yet_says_so(scientist_client, reference_topology):
    product = _product("obs-unplanned")
    au = StorageEndpoint.objects.get(name="AUSRC_DISK")
    Replica.objects.create(product=product, endpoint=au, state="planned")
    at_au = _by_endpoint(scientist_client.get(f"/api/replicas/products/{product.pk}/").json())["AUSRC_DISK"]
    assert at_au["predicted_arrival"] is None
    assert at_au["arrival_note"] == "first copy, not planned yet: the next push cycle plans it"


def test_the_replicas_api_predicts_a_second_copy_with_its_upstream(operator_client, reference_topology):
    """``/api/replicas/replicas/`` asked for the second copy alone still knows when its upstream arrives."""
    au, uk = (StorageEndpoint.objects.get(name=n) for n in ("AUSRC_DISK", "UKSRC_DISK"))
    PathMeasurement.objects.create(
        source="AUSRC", destination="UKSRC", streams=4, bytes=10**9, seconds=10, throughput_bps=800e6
    )
    product = _product("obs-second", predicted_in_s=120)
    first = Replica.objects.create(product=product, endpoint=au, state="copying")
    second = Replica.objects.create(product=product, endpoint=uk, state="planned", upstream=first)
    assert product.predicted_arrival is not None
    expected = product.predicted_arrival + dt.timedelta(seconds=10)
    one = operator_client.get(f"/api/replicas/replicas/{second.pk}/").json()
    (listed,) = operator_client.get("/api/replicas/replicas/", {"endpoint": "UKSRC_DISK"}).json()["results"]
    for row in (one, listed):
        assert _at(row["predicted_arrival"]) == pytest.approx(expected, abs=dt.timedelta(milliseconds=1))
        assert row["arrival_note"].startswith("second copy waits for AUSRC_DISK (predicted")


def _list_queries(client) -> tuple[int, list[dict]]:  # type: ignore[no-untyped-def,type-arg]
    with CaptureQueriesContext(connection) as queries:
        response = client.get("/api/replicas/products/", {"q": "ska:obs-many"})
    assert response.status_code == 200
    return len(queries), response.json()["results"]


def test_a_list_predicts_every_replica_in_the_same_number_of_queries(operator_client, reference_topology):
    """The arrivals are worked out once per response, not per product or replica: a list of 5 products,
    each with a first copy on its way, costs the queries of a list of 1."""
    au = StorageEndpoint.objects.get(name="AUSRC_DISK")

    def add(index: int) -> None:
        product = _product(f"obs-many-{index}", predicted_in_s=30 + index)
        Replica.objects.create(product=product, endpoint=au, state="copying")

    add(0)
    _list_queries(operator_client)  # the token's use is recorded once a minute: not in the counted lists
    one, results = _list_queries(operator_client)
    assert len(results) == 1
    for index in range(1, 5):
        add(index)
    five, results = _list_queries(operator_client)
    assert len(results) == 5
    assert five == one, (one, five)
    for body in results:
        at_au = _by_endpoint(body)["AUSRC_DISK"]
        assert at_au["state"] == "copying" and at_au["arrival_note"] == FIRST_NOTE
        assert at_au["predicted_arrival"] == body["predicted_arrival"] is not None
        assert _at(at_au["predicted_arrival"]) == DataProduct.objects.get(pk=body["id"]).predicted_arrival
