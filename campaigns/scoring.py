"""A simulated campaign's score (pure: no Django): what the simulator did with the campaign's workload,
against the target curve that workload followed.

A product counts as achieved once the simulator has delivered it to its destination's site (its pinned
first copy), as a real campaign counts a product once its destination replica is available. The
samples are the same figures at the end of each of the simulator's bins, as a real campaign's ticks
record them."""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from schedulers.planning.types import Product
from schedulers.simulation.engine import SimResult

from .workload import Workload, WorkloadProduct


def percentile(values: Sequence[float], q: float) -> float | None:
    """The nearest-rank ``q`` percentile (0 < q <= 1) of ``values``; None if there are none."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


@dataclass(frozen=True)
class Outcome:
    """One product of the campaign as the simulator carried it."""

    destination: str  # the campaign's name for it: a storage endpoint
    size_bytes: int
    arrival_s: float
    delivered_s: float  # at its destination's site; inf if it never got there


def outcomes(pinned: Sequence[tuple[WorkloadProduct, Product]], result: SimResult) -> list[Outcome]:
    """Each product's arrival and delivery at its destination's site (``Product.destination``)."""
    out = []
    for wp, p in pinned:
        delivered = result.records[p.id].delivered_s.get(p.destination or "", math.inf)
        out.append(Outcome(wp.destination, wp.size_bytes, p.arrival_s, delivered))
    return out


class _Cumulative:
    """Bytes and products by a time: sorted event times with running totals."""

    def __init__(self, events: Sequence[tuple[float, int]]) -> None:
        ordered = sorted(e for e in events if math.isfinite(e[0]))
        self.times = [t for t, _ in ordered]
        self.bytes = [0, *accumulate(size for _, size in ordered)]

    def by(self, t: float) -> tuple[int, int]:
        n = bisect.bisect_right(self.times, t + 1e-9)
        return self.bytes[n], n


def end_seconds(workload: Workload, done: Sequence[Outcome], until_s: float) -> float:
    """When the campaign ended in simulated time: its last delivery (at least its duration), or the end
    of the drain if a product never arrived, as a real campaign ends when drained or when it gives up."""
    if any(not math.isfinite(o.delivered_s) for o in done):
        return until_s
    return max([workload.duration_seconds, *(o.delivered_s for o in done)])


def access_links(
    result: SimResult, telescopes: Sequence[str], duration_s: float
) -> dict[str, dict[str, Any]]:
    """Each source telescope's access link over the campaign's duration (the bins end on it)."""
    topo, bin_s = result.topology, result.config.bin_s
    bins = round(duration_s / bin_s)
    out = {}
    for tel in sorted(set(telescopes)):
        link = topo.link(topo.telescope(tel).access_link)
        sent = sum(result.access_bytes.get(tel, [])[:bins])
        out[tel] = {
            "link": link.name,
            "capacity_bps": link.capacity_bps,
            "sent_bytes": sent,
            "utilisation": sent * 8 / (link.capacity_bps * duration_s) if link.capacity_bps > 0 else None,
        }
    return out


def simulated_score(workload: Workload, done: Sequence[Outcome], until_s: float) -> dict[str, Any]:
    """Planned (the curve at the duration) vs offered vs achieved, overall and per destination; the
    products' completion times (arrival to delivery at the destination)."""
    planned = workload.planned_bytes_at(workload.duration_seconds)
    per: dict[str, dict[str, Any]] = {
        d: {"planned": int(planned * share), "offered": 0, "achieved": 0}
        | {"complete": 0, "failed": 0, "incomplete": 0}
        for d, share in workload.destination_shares().items()
    }
    latencies: dict[str, list[float]] = {d: [] for d in per}
    for o in done:
        entry = per[o.destination]
        entry["offered"] += o.size_bytes
        if math.isfinite(o.delivered_s):
            entry["achieved"] += o.size_bytes
            entry["complete"] += 1
            latencies[o.destination].append(o.delivered_s - o.arrival_s)
        else:
            entry["incomplete"] += 1
    for d, entry in per.items():
        entry["latency_seconds"] = _latency(latencies[d])
    every = [x for values in latencies.values() for x in values]
    achieved = sum(e["achieved"] for e in per.values())
    end = end_seconds(workload, done, until_s)
    return {
        "planned_bytes": int(planned),
        "offered_bytes": sum(e["offered"] for e in per.values()),
        "achieved_bytes": achieved,
        "achieved_fraction": achieved / planned if planned else None,
        "target_rate_bps": workload.target_rate_bps,
        "achieved_rate_bps": achieved * 8 / end,
        "simulated_seconds": end,
        "products": len(done),
        "complete": len(every),
        "failed": 0,
        "incomplete": len(done) - len(every),
        "success_rate": len(every) / len(done) if done else None,
        "latency_seconds": _latency(every),
        "per_destination": per,
    }


def _latency(values: Sequence[float]) -> dict[str, float | None]:
    return {"p50": percentile(values, 0.5), "p90": percentile(values, 0.9), "max": max(values, default=None)}


def simulated_samples(
    workload: Workload, done: Sequence[Outcome], bin_s: float, until_s: float
) -> list[dict[str, Any]]:
    """The score at the end of every bin until the campaign ended: CampaignSample's fields."""
    duration = workload.duration_seconds
    end = end_seconds(workload, done, until_s)
    shares = workload.destination_shares()
    offered = {
        d: _Cumulative([(o.arrival_s, o.size_bytes) for o in done if o.destination == d]) for d in shares
    }
    achieved = {
        d: _Cumulative([(o.delivered_s, o.size_bytes) for o in done if o.destination == d]) for d in shares
    }
    samples: list[dict[str, Any]] = []
    previous_t, previous_bytes = 0.0, 0
    for k in range(1, math.ceil(end / bin_s - 1e-9) + 1):
        t = min(k * bin_s, end)
        planned = workload.planned_bytes_at(t)
        per = {}
        for d, share in shares.items():
            offered_bytes, _ = offered[d].by(t)
            achieved_bytes, complete = achieved[d].by(t)
            per[d] = {
                "planned": int(planned * share),
                "offered": offered_bytes,
                "achieved": achieved_bytes,
                "complete": complete,
                "failed": 0,
            }
        total = sum(e["achieved"] for e in per.values())
        samples.append(
            {
                "elapsed_seconds": min(t, duration),
                "wall_seconds": t,
                "target_rate_bps": workload.target_rate_at(t) if t < duration else 0.0,
                "planned_bytes": int(planned),
                "achieved_bytes": total,
                "achieved_rate_bps": (total - previous_bytes) * 8 / (t - previous_t)
                if t > previous_t
                else 0.0,
                "products": sum(offered[d].by(t)[1] for d in offered),
                "complete": sum(e["complete"] for e in per.values()),
                "failed": 0,
                "per_destination": per,
            }
        )
        previous_t, previous_bytes = t, total
    return samples
