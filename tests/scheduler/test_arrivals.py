"""Every product waiting at an SDP gets its predicted arrival from each push cycle's plan, with why it is
not sooner; the one submitted keeps the prediction made as its first leg went."""

from __future__ import annotations

import datetime as dt
import html

import pytest

from replicas.models import DataProduct
from replicas.services import FileSpec, register_product
from schedulers.loop import push_cycle
from tests.conftest import policy_of_shares
from topology.models import RegionalCentre, Telescope

pytestmark = pytest.mark.django_db
GB = 10**9


def _one_lane_to_uk() -> None:
    policy_of_shares({"UKSRC_DISK": 1}, name="low-to-uk")
    RegionalCentre.objects.exclude(name="UKSRC").update(share_weight=0)


def _product(name: str, priority: int, size: int) -> DataProduct:
    return register_product(
        scope="ska",
        name=name,
        telescope=Telescope.objects.get(name="SKA1-Low"),
        priority=priority,
        files=[FileSpec("a.ms", size, "0cc737eb")],
    )


def test_each_cycle_predicts_every_waiting_products_arrival_and_why(reference_topology, settings) -> None:  # type: ignore[no-untyped-def]
    settings.SRCNET_LANE_DEPTH = 1
    _one_lane_to_uk()
    urgent, middle, last = (
        _product("urgent", 5, 400 * GB),
        _product("middle", 3, 400 * GB),
        _product("last", 1, 400 * GB),
    )
    before = dt.datetime.now(dt.UTC)
    cycle = push_cycle()
    assert cycle.error == "" and cycle.legs_submitted == 1
    for p in (urgent, middle, last):
        p.refresh_from_db()
    # The urgent one goes now; the others wait on the same lane in priority order, each after the last.
    assert urgent.state == "placing" and "moving on SKA1-Low -> UKSRC since this cycle" in urgent.arrival_note
    assert "waits" in middle.arrival_note and "(1 product(s) ahead on it" in middle.arrival_note
    assert (
        "(2 product(s) ahead on it" in last.arrival_note
        and "the lane carries 1 product(s) at once" in last.arrival_note
    )
    first, second, third = urgent.predicted_arrival, middle.predicted_arrival, last.predicted_arrival
    assert first is not None and second is not None and third is not None
    assert before < first < second < third
    # 400 GB at the lane's planned rate: the arrival is that many seconds away, no sooner.
    rate = float(urgent.arrival_note.split(", ")[-1].split(" Mbit/s")[0]) * 1e6
    expected = before + dt.timedelta(seconds=400 * GB * 8 / rate)
    assert abs((first - expected).total_seconds()) < 0.05 * 400 * GB * 8 / rate + 5

    # The next cycle: the lane is still busy; the submitted product keeps its prediction, the others move on.
    kept = urgent.predicted_arrival
    push_cycle()
    urgent.refresh_from_db()
    middle.refresh_from_db()
    assert urgent.predicted_arrival == kept
    assert middle.predicted_arrival is not None and "waits" in middle.arrival_note


def test_the_prediction_is_in_the_api_and_on_the_product_page(reference_topology, client, scientist) -> None:  # type: ignore[no-untyped-def]
    _one_lane_to_uk()
    product = _product("shown", 3, 10 * GB)
    push_cycle()
    product.refresh_from_db()
    client.force_login(scientist)
    data = client.get(f"/api/replicas/products/{product.pk}/").json()
    assert data["predicted_arrival"] and data["arrival_note"] == product.arrival_note
    page = html.unescape(client.get(f"/replicas/products/{product.pk}/").content.decode())
    assert 'id="arrival"' in page and product.arrival_note.split(":")[0] in page


def test_the_push_loop_pages_show_cycles_and_hide_other_projects_products(  # type: ignore[no-untyped-def]
    reference_topology, client, scientist, operator
):
    """The portal's push-loop pages list the cycles and their re-route events; a cycle's submissions, in
    the page and in the API, leave out another project's proprietary product for a scientist."""
    from projects.models import Project
    from schedulers.models import PushCycle

    _one_lane_to_uk()
    secret = register_product(
        scope="ska",
        name="secret",
        telescope=Telescope.objects.get(name="SKA1-Low"),
        files=[FileSpec("a.ms", GB, "0cc737eb")],
        project=Project.objects.create(code="AA01"),
    )
    shown = _product("open", 1, GB)
    cycle = push_cycle()
    assert {e["product"] for e in cycle.submitted} == {secret.did, shown.did}
    PushCycle.objects.create(
        events=[
            {
                "time_s": 0,
                "telescope": "SKA1-Low",
                "kind": "reroute",
                "detail": "lane SKA1-Low -> UKSRC unavailable",
            }
        ]
    )
    for user, sees_secret in ((operator, True), (scientist, False)):
        client.force_login(user)
        listing = html.unescape(client.get("/scheduler/cycles/").content.decode())
        assert 'data-kind="reroute"' in listing and "lane SKA1-Low -> UKSRC unavailable" in listing
        page = client.get(f"/scheduler/cycles/{cycle.pk}/").content.decode()
        assert shown.did in page and (secret.did in page) == sees_secret
        api = client.get(f"/api/schedulers/cycles/{cycle.pk}/").json()
        assert {e["product"] for e in api["submitted"]} == (
            {secret.did, shown.did} if sees_secret else {shown.did}
        )
