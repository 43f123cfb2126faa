"""What a simulation run says (pure): utilisation, SDP occupancy, volume per SRC, latency, misses, cost."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..planning.lanes import normalised_shares
from .engine import SimResult

SECONDS_PER_DAY = 86400.0


@dataclass(frozen=True)
class Summary:
    name: str
    access_utilisation: dict[str, float]  # telescope -> bytes sent / capacity over the run
    utilisation_series: dict[str, list[float]]  # per bin
    sdp_series: dict[str, list[float]]  # bytes in the SDP buffer at each bin end
    sdp_peak_fraction: dict[str, float]
    delivered_bytes: dict[str, float]  # SRC -> bytes of replicas delivered
    share: dict[str, float]  # SRC -> its share of the primaries
    primary_fraction: dict[str, float]  # SRC -> fraction of primary bytes it received
    latency_hours: dict[str, float]  # p50/p90/p99 of arrival -> last replica delivered
    products: int
    completed: int
    left_sdp: int
    deadline_misses: int
    link_opex_eur_per_day: float
    centre_eur_per_day: float
    carried_cost_eur: float
    events: int
    sim_events: int


def summarise(name: str, result: SimResult, centre_eur_per_year: float) -> Summary:
    """Figures of one run over its whole duration."""
    topo, cfg = result.topology, result.config
    duration = cfg.duration_s
    util = {}
    series = {}
    for tel in sorted(result.access_bytes):
        cap = topo.link(topo.telescope(tel).access_link).capacity_bps
        bins = result.access_bytes[tel]
        util[tel] = sum(bins) * 8 / (cap * duration)
        series[tel] = [b * 8 / (cap * cfg.bin_s) for b in bins]
    edges = np.arange(1, len(next(iter(result.access_bytes.values()))) + 1) * cfg.bin_s
    sdp: dict[str, list[float]] = {}
    peak: dict[str, float] = {}
    for tel in sorted(result.access_bytes):
        recs = [r for r in result.records.values() if r.product.telescope == tel]
        arrivals = np.array(sorted(r.product.arrival_s for r in recs))
        sizes_by_arrival = np.array(
            [r.product.size_bytes for r in sorted(recs, key=lambda r: r.product.arrival_s)]
        )
        left = sorted((r.left_sdp_s, r.product.size_bytes) for r in recs if math.isfinite(r.left_sdp_s))
        left_t = np.array([x[0] for x in left])
        left_cum = np.concatenate([[0.0], np.cumsum([x[1] for x in left])])
        arr_cum = np.concatenate([[0.0], np.cumsum(sizes_by_arrival)])
        occ = (
            arr_cum[np.searchsorted(arrivals, edges, side="right")]
            - left_cum[np.searchsorted(left_t, edges, side="right")]
        )
        sdp[tel] = occ.tolist()
        peak[tel] = float(occ.max()) / topo.telescope(tel).sdp_buffer_bytes if len(occ) else 0.0
    delivered: dict[str, float] = {}
    primary: dict[str, float] = {}
    latencies = []
    misses = 0
    completed = 0
    left_sdp = 0
    for rec in result.records.values():
        p = rec.product
        for site in rec.delivered_s:
            delivered[site] = delivered.get(site, 0.0) + p.size_bytes
        if rec.replicas and rec.replicas[0] in rec.delivered_s:
            primary[rec.replicas[0]] = primary.get(rec.replicas[0], 0.0) + p.size_bytes
        if math.isfinite(rec.left_sdp_s):
            left_sdp += 1
        if rec.replicas and all(s in rec.delivered_s for s in rec.replicas):
            completed += 1
            latencies.append((max(rec.delivered_s[s] for s in rec.replicas) - p.arrival_s) / 3600)
        spec = topo.telescope(p.telescope)
        deadline = (
            p.deadline_s
            if p.deadline_s is not None
            else p.arrival_s + spec.sdp_buffer_bytes / (spec.daily_volume_bytes / SECONDS_PER_DAY)
        )
        if rec.left_sdp_s > deadline and deadline <= duration:
            misses += 1
    total_primary = sum(primary.values()) or 1.0
    pct = np.percentile(latencies, [50, 90, 99]).tolist() if latencies else [math.nan] * 3
    used = [topo.link(n) for n, b in result.link_bytes.items() if b > 0]
    centres = {s.name for s in topo.sites if s.is_distribution_centre}
    used_centres = {k[0] for k, b in result.lane_bytes.items() if b > 0 and k[0] in centres}
    carried = sum(
        b * topo.link(n).opex_eur_per_year / (topo.link(n).capacity_bps / 8 * 365 * SECONDS_PER_DAY)
        for n, b in result.link_bytes.items()
    )
    return Summary(
        name=name,
        access_utilisation=util,
        utilisation_series=series,
        sdp_series=sdp,
        sdp_peak_fraction=peak,
        delivered_bytes=dict(sorted(delivered.items())),
        share=normalised_shares(topo),
        primary_fraction={k: v / total_primary for k, v in sorted(primary.items())},
        latency_hours=dict(zip(("p50", "p90", "p99"), pct, strict=True)),
        products=len(result.records),
        completed=completed,
        left_sdp=left_sdp,
        deadline_misses=misses,
        link_opex_eur_per_day=sum(lk.opex_eur_per_year for lk in used) / 365 * (duration / SECONDS_PER_DAY),
        centre_eur_per_day=len(used_centres) * centre_eur_per_year / 365 * (duration / SECONDS_PER_DAY),
        carried_cost_eur=carried,
        events=len(result.events),
        sim_events=result.sim_events,
    )
