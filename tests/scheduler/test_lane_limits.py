"""The lane's link limit follows the plan every cycle: a lane with copies in flight and nothing new to
submit still gets the copies its plan gives it (its share of the access link grows when another lane's
work ends), through the transfertool's /config/links, and only when the limit held differs."""

from __future__ import annotations

import pytest

from replicas.models import DataProduct, Replica
from replicas.services import FileSpec, register_product
from schedulers.leg_submission import follow_lane_limits
from schedulers.planning import PlanConfig, Product, ReplicaPolicy, plan
from schedulers.planning.types import LiveState, Measurement
from topology.models import StorageEndpoint, Telescope
from transfers.embedded_transfertool import EmbeddedTransfertool

from .test_drain_together import two_srcs

MB = 1e6


def test_a_lane_with_only_copies_in_flight_is_planned_for_files_the_size_of_theirs() -> None:
    measured = tuple(Measurement("T1", dest, 1, 12e6) for dest in "AB" for _ in range(5))
    # Sixteen 32 MB files still in flight to A, nothing new for it; one product queued for B.
    state = LiveState(
        measurements=measured,
        lane_backlog_bytes={("T1", "A"): 512 * MB},
        lane_file_bytes={("T1", "A"): 32 * MB},
    )
    products = [Product("b0", "T1", 64 * MB, files=2, destination="B")]
    result = plan(products, two_srcs(), ReplicaPolicy(), state, PlanConfig())
    (b_leg,) = result.legs
    assert result.lane_copies[("T1", "B")] == b_leg.lane_copies
    # By shares both lanes have half the link, and their files are the same size: the same copies.
    assert result.lane_copies[("T1", "A")] == b_leg.lane_copies
    # Draining together, A's work in sight (eight times B's) takes most of the link: more copies.
    together = plan(products, two_srcs(), ReplicaPolicy(), state, PlanConfig(drain_together=True))
    assert together.lane_copies[("T1", "A")] > together.lane_copies[("T1", "B")]
    # Without copies in flight (or without their size) a lane with no leg asks for nothing.
    idle = plan(products, two_srcs(), ReplicaPolicy(), LiveState(measurements=measured), PlanConfig())
    assert ("T1", "A") not in idle.lane_copies


def test_the_loop_sets_the_lanes_limit_to_the_plans_copies_when_it_differs(reference_topology) -> None:  # type: ignore[no-untyped-def]
    low = Telescope.objects.get(name="SKA1-Low")
    product = register_product(
        scope="ska", name="in-flight", telescope=low, files=[FileSpec("a.ms", 10**9, "0cc737eb")]
    )
    uk = StorageEndpoint.objects.get(name="UKSRC_DISK")
    Replica.objects.create(product=product, endpoint=uk, state="copying")
    DataProduct.objects.filter(pk=product.pk).update(state="placing")
    tool = EmbeddedTransfertool()
    lane = ("SKA1-Low", "UKSRC")

    (changed,) = follow_lane_limits({lane: 6}, tool)
    assert (changed.min_active, changed.max_active, changed.optimizer_mode) == (6, 6, 0)
    scheme = uk.tpc_scheme
    pair = (tool.storage_element(product.source.url(scheme, "x")), tool.storage_element(uk.url(scheme, "x")))
    assert changed.pair == pair
    assert [(c.pair, c.max_active) for c in tool.link_configs()] == [(pair, 6)]
    # The same limit again changes nothing; a new one does.
    assert follow_lane_limits({lane: 6}, tool) == []
    (again,) = follow_lane_limits({lane: 3}, tool)
    assert again.max_active == 3 and [c.max_active for c in tool.link_configs()] == [3]
    # A lane with nothing in flight is left as it is.
    assert follow_lane_limits({("SKA1-Low", "AUSRC"): 5}, tool) == []


pytestmark = pytest.mark.django_db


def test_a_campaigns_lane_with_copies_in_flight_still_shares_the_link(reference_topology) -> None:  # type: ignore[no-untyped-def]
    """The pinned plan's SRCs are those of the products queued and those the telescope has first copies in
    flight to: a lane whose products are all at the transfer service is still sending, so the lane with a
    product queued gets half the link, not all of it (which would put two of its products in flight at
    once, each arriving later than the queue drained in order says)."""
    import datetime as dt

    from schedulers.telescope_plans import cycle_plans
    from topology.models import RegionalCentre

    RegionalCentre.objects.filter(name__in=("UKSRC", "AUSRC")).update(
        budget_per_telescope_bps=int(100e9), peak_bps=int(100e9)
    )
    low = Telescope.objects.get(name="SKA1-Low")
    queued = register_product(
        scope="ska", name="queued", telescope=low, files=[FileSpec("q.ms", 10**11, "0cc737eb")]
    )
    Replica.objects.create(
        product=queued, endpoint=StorageEndpoint.objects.get(name="AUSRC_DISK"), state="planned"
    )

    def au_rate() -> float:
        errors: list[str] = []
        plans = list(cycle_plans(now=dt.datetime.now(dt.UTC), config=PlanConfig(), errors=errors))
        assert errors == []
        lanes = [lane for planned, _ in plans for lane in planned.result.lanes]
        return next(lane.rate_bps for lane in lanes if lane.key == ("SKA1-Low", "AUSRC"))

    assert au_rate() == pytest.approx(97e9)  # nothing else from SKA1-Low is moving: the whole link
    files = [FileSpec("s.ms", 10**11, "0cc737eb")]
    sent = register_product(scope="ska", name="sent", telescope=low, files=files)
    Replica.objects.create(
        product=sent, endpoint=StorageEndpoint.objects.get(name="UKSRC_DISK"), state="copying"
    )
    DataProduct.objects.filter(pk=sent.pk).update(state="placing")
    assert au_rate() == pytest.approx(48.5e9)
