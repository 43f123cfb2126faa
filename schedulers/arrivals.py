"""When each product waiting at an SDP will arrive at its first copy's SRC, by the current plan, and why
not sooner: recorded on the product every push cycle (``DataProduct.predicted_arrival``, ``arrival_note``),
shown to scientists in the API, the CLI and the portal.

The plan's times count from the cycle's start: a leg due now finishes at ``finish_s``; a leg that waits
starts at ``start_s``, once the legs ahead of it on its lane (in the planner's order of priority and
deadline) have gone, and the lane has room (``SRCNET_LANE_DEPTH`` products at once). A product relayed
through a distribution centre arrives with its forward leg. The prediction made when a product's first leg
is submitted is the last one: it stays on the product, so it can be compared with the arrival."""

from __future__ import annotations

import bisect
import datetime as dt
from collections.abc import Iterable

from django.db.models import Q

from replicas.models import DataProduct

from .lane_load import LaneLoad
from .planning.types import Leg, LegRole

FIRST_COPY = (LegRole.PRIMARY, LegRole.FORWARD)


def predictions(legs: Iterable[Leg], due: Iterable[int], load: LaneLoad) -> dict[str, tuple[float, str]]:
    """Product id -> (seconds from now to its arrival at its SRC, why then), for every product the plan
    carries to an SRC; ``due``: the indices of the legs this cycle submits."""
    legs = list(legs)
    due = set(due)
    # Start times on each lane, sorted: how many legs start before a given one is a bisection.
    starts: dict[tuple[str, str], list[float]] = {}
    for other in legs:
        starts.setdefault((other.source, other.destination), []).append(other.start_s)
    for times in starts.values():
        times.sort()
    out: dict[str, tuple[float, str]] = {}
    for index, leg in enumerate(legs):
        if leg.role not in FIRST_COPY:
            continue
        relayed = leg.role == LegRole.FORWARD and leg.depends_on is not None
        start_index = leg.depends_on if relayed and leg.depends_on is not None else index
        start = legs[start_index]
        lane = (start.source, start.destination)
        how = f"{leg.streams} stream(s) x {leg.files} file(s), {leg.rate_bps / 1e6:.0f} Mbit/s planned"
        if start_index in due:
            why = f"moving on {lane[0]} -> {lane[1]} since this cycle: {how}"
        else:
            ahead = bisect.bisect_left(starts[lane], start.start_s)
            room = max(0, load.depth_of(lane) - load.counts[lane])  # before this cycle's submissions
            reason = (
                f"the lane carries {load.depth_of(lane)} product(s) at once"
                if ahead >= room
                else "the access link and the lanes' shares"
            )
            why = (
                f"waits {start.start_s:.0f} s for {lane[0]} -> {lane[1]} ({ahead} product(s) ahead on it; "
                f"{reason}), then {how}"
            )
        if leg.role == LegRole.FORWARD:
            why += f"; relayed through {leg.source}"
        arrival = leg.finish_s
        if leg.product_id not in out or arrival > out[leg.product_id][0]:
            out[leg.product_id] = (arrival, why)
    return out


def record(found: dict[str, tuple[float, str]], now: dt.datetime) -> int:
    """Write each product's predicted arrival and its reason; returns how many products were updated."""
    if not found:
        return 0
    pairs = [did.partition(":")[::2] for did in found]
    wanted = Q()
    for scope, name in pairs:
        wanted |= Q(scope=scope, name=name)
    products = list(DataProduct.objects.filter(wanted).only("pk", "scope", "name"))
    for product in products:
        seconds, why = found[product.did]
        product.predicted_arrival = now + dt.timedelta(seconds=max(0.0, seconds))
        product.arrival_note = why[:300]
    DataProduct.objects.bulk_update(products, ["predicted_arrival", "arrival_note"])
    return len(products)
