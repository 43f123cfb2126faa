"""Every product waiting at an SDP gets its predicted arrival from each push cycle's plan, with why it is
not sooner; one whose first copy is moving is predicted again each cycle from its lane's queue, and keeps
apart the prediction made as its first leg went."""

from __future__ import annotations

import datetime as dt
import html

import pytest

from replicas.models import DataProduct
from replicas.services import FileSpec, register_product
from schedulers.arrivals import (
    NO_ROOM,
    copies_in_flight,
    in_flight_predictions,
    lane_backlog_bytes,
    lane_rates,
    predictions,
    record,
)
from schedulers.lane_load import LaneLoad
from schedulers.loop import push_cycle
from schedulers.planning.types import Leg, LegRole
from tests.conftest import policy_of_shares
from tests.factories import product_at_sdp, push_job_for
from topology.models import RegionalCentre, Telescope

GB = 10**9


def _one_lane_to_uk() -> None:
    policy_of_shares({"UKSRC_DISK": 1}, name="low-to-uk")
    RegionalCentre.objects.exclude(name="UKSRC").update(share_weight=0)


def _product(name: str, priority: int, size: int) -> DataProduct:
    return product_at_sdp(name, sizes=[size], priority=priority)


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

    # The prediction made as the first copy went is kept apart, to be measured against the arrival.
    assert urgent.submitted_prediction == first and middle.submitted_prediction is None

    # The next cycle: the lane is still busy and has no measured rate yet, so the product in flight keeps
    # its prediction; the others move on.
    kept = urgent.predicted_arrival
    push_cycle()
    urgent.refresh_from_db()
    middle.refresh_from_db()
    assert urgent.predicted_arrival == kept and urgent.submitted_prediction == kept
    assert middle.predicted_arrival is not None and "waits" in middle.arrival_note

    # Once the lane has delivered, the copy in flight is predicted again from its queue at that rate; the
    # prediction made at submission stays as it was.
    _measured(("SKA1-Low", "UKSRC"), 80e9)
    push_cycle()
    urgent.refresh_from_db()
    assert urgent.predicted_arrival != kept and urgent.submitted_prediction == kept
    assert "moving on SKA1-Low -> UKSRC since" in urgent.arrival_note
    assert "(0 copy(ies) ahead), the lane delivers 80000 Mbit/s lately" in urgent.arrival_note


def test_the_prediction_is_in_the_api_and_on_the_product_page(reference_topology, client, scientist) -> None:  # type: ignore[no-untyped-def]
    _one_lane_to_uk()
    product = _product("shown", 3, 10 * GB)
    push_cycle()
    product.refresh_from_db()
    client.force_login(scientist)
    data = client.get(f"/api/replicas/products/{product.pk}/").json()
    assert data["predicted_arrival"] and data["arrival_note"] == product.arrival_note
    assert data["submitted_prediction"] == data["predicted_arrival"]  # submitted this cycle
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


def _leg(product: str, start_s: float, size: float) -> Leg:
    return Leg(
        product, LegRole.PRIMARY, "T", "A", ("l",), 1, 1, start_s, 0, start_s + 1.0, 1e6, 3, size_bytes=size
    )


def test_where_the_lane_has_delivered_a_product_arrives_when_its_queue_drains_at_that_rate() -> None:
    """The lane's queue: 50 MB still to copy in flight, then the legs in the plan's order; at the measured
    100 Mbit/s the first leg's product arrives after 150 MB, the second after 350 MB. Without a measurement
    the plan's own finish time stands."""
    legs = [_leg("later", 30.0, 200e6), _leg("first", 0.0, 100e6)]
    load = LaneLoad(depth=2)
    measured = predictions(legs, [1], load, rates={("T", "A"): 100e6}, backlog={("T", "A"): 50e6})
    assert measured["first"][0] == pytest.approx(150e6 * 8 / 100e6)
    assert measured["later"][0] == pytest.approx(350e6 * 8 / 100e6)
    assert "the lane delivers 100 Mbit/s lately, 150 MB to go on it" in measured["first"][1]
    planned = predictions(legs, [1], load)
    assert planned["first"][0] == 1.0 and planned["later"][0] == 31.0


@pytest.mark.django_db
def test_a_lanes_rate_is_its_recent_jobs_bytes_over_the_time_it_carried_them() -> None:
    from schedulers.models import PathMeasurement

    now = dt.datetime.now(dt.UTC)

    def job(ended_s_ago: float, seconds: float, size: int, lane: tuple[str, str] = ("T", "A")) -> None:
        row = PathMeasurement.objects.create(
            source=lane[0], destination=lane[1], streams=1, bytes=size, seconds=seconds, throughput_bps=1.0
        )
        PathMeasurement.objects.filter(pk=row.pk).update(created=now - dt.timedelta(seconds=ended_s_ago))

    # Two jobs in flight together over [100, 110] and [105, 115] s ago, one alone over [20, 30] s ago:
    # 25 s of carrying, 250 MB. An hour-old job and another lane's do not count.
    job(100, 10, 100_000_000)
    job(95, 10, 50_000_000)
    job(20, 10, 100_000_000)
    job(3600, 10, 10**12)
    job(5, 1, 10**9, lane=("T", "B"))
    rates = lane_rates(now)
    assert rates[("T", "A")] == pytest.approx(250e6 * 8 / 25)
    assert rates[("T", "B")] == pytest.approx(8e9)


def _copying_to_uk(now: dt.datetime, submitted_s_ago: dict[str, float]) -> None:
    """2 GB products whose first copy to UKSRC was submitted that many seconds before ``now``."""
    from replicas.models import Replica
    from topology.models import StorageEndpoint

    uk = StorageEndpoint.objects.get(name="UKSRC_DISK")
    for name, seconds in submitted_s_ago.items():
        replica = Replica.objects.create(product=_product(name, 3, 2 * GB), endpoint=uk, state="copying")
        Replica.objects.filter(pk=replica.pk).update(created=now - dt.timedelta(seconds=seconds))


def test_a_product_in_flight_counts_what_its_share_of_the_lane_has_not_sent_yet(reference_topology) -> None:  # type: ignore[no-untyped-def]
    now = dt.datetime.now(dt.UTC)
    _copying_to_uk(now, {"one": 10, "two": 30})
    # 800 Mbit/s on the lane, shared by the two: 50 MB/s each; 1.5 GB and 0.5 GB still to copy.
    backlog = lane_backlog_bytes(now, {("SKA1-Low", "UKSRC"): 800e6})
    assert backlog == {("SKA1-Low", "UKSRC"): pytest.approx(2 * GB)}
    assert lane_backlog_bytes(now, {}) == {("SKA1-Low", "UKSRC"): pytest.approx(4 * GB)}


def test_copies_in_flight_arrive_in_submission_order_at_their_lanes_rate(reference_topology) -> None:  # type: ignore[no-untyped-def]
    """Each cycle predicts the products already moving again: a lane's copies drain in the order they were
    submitted, at the lane's measured rate. Where the lane has no measurement the prediction made at
    submission stands (nothing is written)."""
    now = dt.datetime.now(dt.UTC)
    _copying_to_uk(now, {"newer": 10, "older": 30})
    rates = {("SKA1-Low", "UKSRC"): 800e6}
    # 50 MB/s each since each was submitted: "older" has 0.5 GB left, "newer" 1.5 GB behind it.
    found = in_flight_predictions(copies_in_flight(now, rates), rates)
    older, newer = (DataProduct.objects.get(name=n).pk for n in ("older", "newer"))
    assert found[older][0] == pytest.approx(0.5 * GB * 8 / 800e6)
    assert found[newer][0] == pytest.approx(2 * GB * 8 / 800e6)
    assert "2000 MB to go on the lane up to it (1 copy(ies) ahead)" in found[newer][1]
    assert in_flight_predictions(copies_in_flight(now, {}), {}) == {}


def test_a_copy_arrives_no_sooner_than_its_slowest_file_at_the_pace_it_keeps(reference_topology) -> None:  # type: ignore[no-untyped-def]
    """One TCP connection on a long path can crawl far below its share of the lane; the product waits for
    it. A file whose recent pace the service saw at 5 MB/s, with 1.9 GB to go, ends in 380 s, whatever the
    lane's queue says (19 s). A file with no pace yet (its looks span too little time) is not held to one."""
    from replicas.models import Replica
    from transfers.models import TransferFile

    now = dt.datetime.now(dt.UTC)
    _copying_to_uk(now, {"crawling": 25, "starting": 5})
    rates = {("SKA1-Low", "UKSRC"): 800e6}
    for name, pace in (("crawling", 5e6), ("starting", None)):
        replica = Replica.objects.get(product__name=name, state="copying")
        job = push_job_for(replica)
        TransferFile.objects.create(
            job=job,
            file_index=0,
            source_surl=f"davs://sdp/{name}",
            dest_surl=f"davs://uk/{name}",
            filesize=2 * GB,
            state="ACTIVE",
            start_time=now - dt.timedelta(seconds=20),
            transferred_bytes=GB // 10,
            progress_at=now,
            progress_bps=pace,
        )
    found = in_flight_predictions(copies_in_flight(now, rates), rates)
    crawling, starting = (DataProduct.objects.get(name=n).pk for n in ("crawling", "starting"))
    assert found[crawling][0] == pytest.approx(380.0)
    assert "its slowest file, at the pace it keeps, ends in 380 s" in found[crawling][1]
    # "starting" goes after "crawling" on the lane: both files' bytes left (each has had half the lane
    # since its progress was seen, i.e. nothing more), at 100 MB/s.
    assert found[starting][0] == pytest.approx(2 * 1.9 * GB * 8 / 800e6)
    assert "pace it keeps" not in found[starting][1]


def test_a_copy_whose_files_the_service_reports_counts_what_they_have_not_sent(reference_topology) -> None:  # type: ignore[no-untyped-def]
    """A job that waits at the transfer service for a copy slot has sent nothing, however long ago it was
    submitted; a finished file has nothing left; an active one has had its share of the lane's rate (the
    rate over the lane's active files) since it started."""
    from replicas.models import Replica
    from topology.models import StorageEndpoint
    from transfers.models import TransferFile, TransferJob

    now = dt.datetime.now(dt.UTC)
    uk = StorageEndpoint.objects.get(name="UKSRC_DISK")

    def copy(name: str, files: list[tuple[str, float | None]]) -> None:
        product = _product(name, 3, 2 * GB)
        replica = Replica.objects.create(product=product, endpoint=uk, state="copying")
        Replica.objects.filter(pk=replica.pk).update(created=now - dt.timedelta(seconds=60))
        job = push_job_for(replica)
        for index, (state, started_s_ago) in enumerate(files):
            TransferFile.objects.create(
                job=job,
                file_index=index,
                source_surl=f"davs://sdp/{name}/{index}",
                dest_surl=f"davs://uk/{name}/{index}",
                filesize=GB,
                state=state,
                start_time=None if started_s_ago is None else now - dt.timedelta(seconds=started_s_ago),
            )

    # Two active files on the lane at 800 Mbit/s: 50 MB/s each. "moving": one file done, one active for
    # 10 s (0.5 GB sent); "waiting": submitted 60 s ago, both files still queued at the service.
    copy("moving", [("FINISHED", 20.0), ("ACTIVE", 10.0)])
    copy("waiting", [("SUBMITTED", None), ("SUBMITTED", None)])
    copy("other", [("ACTIVE", 4.0), ("SUBMITTED", None)])  # 0.2 GB of its active file sent
    backlog = lane_backlog_bytes(now, {("SKA1-Low", "UKSRC"): 800e6})
    assert backlog[("SKA1-Low", "UKSRC")] == pytest.approx(0.5 * GB + 2 * GB + 0.8 * GB + GB, rel=1e-3)
    # Where the service has seen the file's progress at its destination (0.1 GB, 1 s ago), that counts,
    # plus its share of the lane since then (50 MB): "other" has 0.85 GB left on that file, not 0.8.
    TransferFile.objects.filter(dest_surl="davs://uk/other/0").update(
        transferred_bytes=GB // 10, progress_at=now - dt.timedelta(seconds=1)
    )
    progressed = lane_backlog_bytes(now, {("SKA1-Low", "UKSRC"): 800e6})
    assert progressed[("SKA1-Low", "UKSRC")] == pytest.approx(backlog[("SKA1-Low", "UKSRC")] + 0.05 * GB)
    # A job another FTS3 client submitted naming "moving"'s replica (its metadata is the client's) does
    # not count: only the push loop's own jobs say how far a copy has got.
    from django.contrib.auth import get_user_model

    client = get_user_model().objects.create_user("fts3-client", password="x")
    moving = Replica.objects.get(product__name="moving", endpoint=uk)
    forged = TransferJob.objects.create(submitter=client, metadata={"replica_id": moving.pk})
    TransferFile.objects.create(
        job=forged,
        file_index=0,
        source_surl="davs://sdp/x",
        dest_surl="davs://uk/x",
        filesize=GB,
        state="FINISHED",
    )
    assert lane_backlog_bytes(now, {("SKA1-Low", "UKSRC"): 800e6}) == progressed


# Copies other than a product's first: a second copy made SRC -> SRC, and a Rucio rule's copy.


def _measured(lane: tuple[str, str], bps: float) -> None:
    """A push job that delivered ``bps`` on ``lane`` over the last 10 s (what lane_rates reads)."""
    from schedulers.models import PathMeasurement

    PathMeasurement.objects.create(
        source=lane[0],
        destination=lane[1],
        streams=4,
        bytes=int(bps * 10 / 8),
        seconds=10,
        throughput_bps=bps,
    )


def _copies():  # type: ignore[no-untyped-def]
    from replicas.models import Replica

    return Replica.objects.select_related("product", "endpoint__site", "upstream__endpoint__site")


def test_a_second_copy_arrives_after_its_upstream_and_the_copies_ahead_on_its_lane(
    reference_topology,
) -> None:  # type: ignore[no-untyped-def]
    from replicas.models import Replica
    from schedulers.arrivals import copy_arrivals
    from topology.models import StorageEndpoint

    au, uk = (StorageEndpoint.objects.get(name=n) for n in ("AUSRC_DISK", "UKSRC_DISK"))
    _measured(("AUSRC", "UKSRC"), 800e6)  # 100 MB/s
    now = dt.datetime.now(dt.UTC)
    # Ahead on AUSRC -> UKSRC: a second copy in flight for 5 s (alone on the lane: 500 MB sent of 2 GB).
    earlier = _product("earlier", 3, 2 * GB)
    source = Replica.objects.create(product=earlier, endpoint=au, state="available")
    going = Replica.objects.create(product=earlier, endpoint=uk, state="copying", upstream=source)
    Replica.objects.filter(pk=going.pk).update(updated=now - dt.timedelta(seconds=5))
    # This one: its first copy is at AUSRC already; 1 GB to copy after the 1.5 GB ahead.
    mine = _product("mine", 3, GB)
    first = Replica.objects.create(product=mine, endpoint=au, state="available")
    second = Replica.objects.create(product=mine, endpoint=uk, state="planned", upstream=first)
    # A third whose first copy is still on its way, predicted in 60 s: its copy waits for it.
    later = _product("later", 3, GB)
    DataProduct.objects.filter(pk=later.pk).update(
        predicted_arrival=now + dt.timedelta(seconds=60), arrival_note="moving on SKA1-Low -> AUSRC"
    )
    later.refresh_from_db()
    coming = Replica.objects.create(product=later, endpoint=au, state="copying")
    after = Replica.objects.create(product=later, endpoint=uk, state="planned", upstream=coming)
    found = copy_arrivals(_copies(), now)
    assert set(found) == {going.pk, second.pk, coming.pk, after.pk}  # the available copies need none
    mine_at = found[second.pk]
    assert mine_at.at == pytest.approx(now + dt.timedelta(seconds=25), abs=dt.timedelta(seconds=0.5))
    assert "second copy from AUSRC_DISK on AUSRC -> UKSRC: 1 copy(ies) ahead on the lane" in mine_at.note
    assert "2500 MB to go up to this copy; the lane delivers 800 Mbit/s lately" in mine_at.note
    # The first copy's own prediction is the push loop's; the copy after it waits for it (60 s), by which
    # time the 2.5 GB ahead of it have drained (25 s), then takes its own 10 s.
    assert found[coming.pk].at == later.predicted_arrival
    assert found[after.pk].at == pytest.approx(now + dt.timedelta(seconds=70), abs=dt.timedelta(seconds=0.5))
    assert "waits for AUSRC_DISK (predicted" in found[after.pk].note
    # Without a measurement the lane's path's per-flow ceiling stands in, and says so.
    from schedulers.models import PathMeasurement

    PathMeasurement.objects.all().delete()
    unmeasured = copy_arrivals([second], now)[second.pk]
    assert unmeasured.at is not None and unmeasured.at > now
    assert "nothing measured on the lane in the last 30 min: its path's per-flow ceiling" in unmeasured.note
    # An upstream that failed: no time, and why.
    Replica.objects.filter(pk=first.pk).update(state="failed")
    second.refresh_from_db()
    failed = copy_arrivals(
        Replica.objects.filter(pk=second.pk).select_related(
            "product", "endpoint__site", "upstream__endpoint__site"
        ),
        now,
    )[second.pk]
    assert failed.at is None and failed.note == "its upstream copy at AUSRC_DISK failed"


def test_a_rucio_rules_copy_arrives_when_its_links_queue_at_the_fts3_endpoint_drains(  # type: ignore[no-untyped-def]
    reference_topology, operator
) -> None:
    from django.test import Client

    from identity.tokens import issue
    from replicas.models import Replica
    from schedulers.arrivals import copy_arrivals
    from schedulers.models import PlannedRule
    from tests.monitoring.test_rucio_jobs import rucio_job
    from topology.models import StorageEndpoint

    token = issue(operator, name="test", scope="fts3")[1]
    fts = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    uk = StorageEndpoint.objects.get(name="UKSRC_DISK")
    _measured(("SKA1-Low", "UKSRC"), 800e6)
    ahead, mine, waiting = _product("ahead", 3, GB), _product("sci-mine", 3, GB), _product("sci-wait", 3, GB)
    reason = "rucio rule 9a1b2c (SKA User Request, UKSRC_DISK): REPLICATING"
    copy = Replica.objects.create(
        product=mine, endpoint=uk, state="copying", reason=reason, rucio_rule="9a1b2c"
    )
    idle = Replica.objects.create(
        product=waiting, endpoint=uk, state="planned", reason=reason, rucio_rule="9a1b2c"
    )
    # Rucio's conveyor's jobs as it submits them to the platform's FTS3 endpoint: another product's file
    # first, then this copy's two files (one job each), all on SKA1-LOW_SDP -> UKSRC_DISK.
    rucio_job(fts, scope="ska", dataset=ahead.name, file="x.ms", size=GB)
    for name in ("a.ms", "b.ms"):
        rucio_job(fts, scope="ska", dataset=mine.name, file=name, size=GB // 2)
    now = dt.datetime.now(dt.UTC)
    found = copy_arrivals(_copies(), now)
    # 2 GB on the link up to this copy's last file, at 100 MB/s: 20 s.
    assert found[copy.pk].at == pytest.approx(now + dt.timedelta(seconds=20), abs=dt.timedelta(seconds=0.5))
    assert found[copy.pk].note == (
        "Rucio's conveyor: 2 file(s) at the FTS3 endpoint on SKA1-Low -> UKSRC, "
        "1 file(s) of other jobs ahead on the link, 2000 MB to go up to this copy; "
        "the lane delivers 800 Mbit/s lately"
    )
    assert found[idle.pk].at is None
    assert found[idle.pk].note == "waits for Rucio's conveyor to submit its transfers to the FTS3 endpoint"
    # A rule the push loop placed through Rucio has the plan's own prediction.
    planned_at = now + dt.timedelta(seconds=42)
    PlannedRule.objects.create(
        rule_id="77aa",
        product=waiting,
        rse="UKSRC_DISK",
        source_site="SKA1-Low",
        destination_site="UKSRC",
        planned_bps=3e9,
        streams=4,
        predicted_arrival=planned_at.timestamp(),
    )
    planned = copy_arrivals([idle], now)[idle.pk]
    assert planned.at == pytest.approx(planned_at, abs=dt.timedelta(milliseconds=1))
    assert planned.note.startswith("Rucio rule 77aa placed by the push plan on SKA1-Low -> UKSRC")


def test_a_product_the_plan_has_no_room_for_gets_no_time_and_says_why(reference_topology) -> None:  # type: ignore[no-untyped-def]
    """A leg the planner could not place ends at infinity (seen in CI: the cycle raised OverflowError and
    submitted nothing while a fault test's destination was down); the product shows no time, and why."""
    now = dt.datetime.now(dt.UTC)
    waiting, placed = _product("nowhere", 3, GB), _product("somewhere", 3, GB)
    found = {waiting.did: (float("inf"), "waits for SKA1-Low -> UKSRC"), placed.did: (30.0, "moving")}
    assert record(found, now) == 2
    waiting.refresh_from_db()
    placed.refresh_from_db()
    assert waiting.predicted_arrival is None
    assert waiting.arrival_note == f"{NO_ROOM}; waits for SKA1-Low -> UKSRC"
    assert placed.predicted_arrival == now + dt.timedelta(seconds=30)


def test_a_prediction_that_did_not_move_is_not_written_again(reference_topology) -> None:  # type: ignore[no-untyped-def]
    """Every cycle predicts every planned product; one whose arrival moved by less than a second, for the
    same reason, keeps its row as it was (the cycles of a backlog rewrote thousands of rows each)."""
    now = dt.datetime.now(dt.UTC)
    waiting, stuck = _product("steady", 3, GB), _product("stuck", 3, GB)
    found = {waiting.did: (600.0, "waits"), stuck.did: (float("inf"), "waits")}
    assert record(found, now) == 2
    # A cycle 0.4 s later predicts the same instant, give or take a few milliseconds: nothing written.
    later = now + dt.timedelta(seconds=0.4)
    assert record({waiting.did: (599.9, "waits"), stuck.did: (float("inf"), "waits")}, later) == 0
    waiting.refresh_from_db()
    assert waiting.predicted_arrival == now + dt.timedelta(seconds=600)
    # It moves by a second or more, or its reason changes: written.
    assert record({waiting.did: (601.0, "waits"), stuck.did: (float("inf"), "waits longer")}, later) == 2
    waiting.refresh_from_db()
    stuck.refresh_from_db()
    assert waiting.predicted_arrival == later + dt.timedelta(seconds=601)
    assert stuck.predicted_arrival is None and stuck.arrival_note == f"{NO_ROOM}; waits longer"
