"""Input checks for the planner (pure): every error names the field and the product or site at fault."""

from __future__ import annotations

import math
from collections.abc import Sequence

from .policies import ReplicaPolicy, share_sites, validate_policy, validate_relays
from .types import LiveState, PlanConfig, PlanInputError, Product, Topology


def _finite(value: float) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)


def validate_topology(topology: Topology) -> None:
    links = {lk.name for lk in topology.links}
    sites = {s.name for s in topology.sites} | {t.name for t in topology.telescopes}
    for lk in topology.links:
        if not (_finite(lk.capacity_bps) and lk.capacity_bps >= 0):
            raise PlanInputError(f"capacity_bps of link {lk.name} must be a non-negative number")
        if not (_finite(lk.rtt_ms) and lk.rtt_ms > 0):
            raise PlanInputError(f"rtt_ms of link {lk.name} must be positive")
        if not (_finite(lk.loss_rate) and 0 <= lk.loss_rate < 1):
            raise PlanInputError(f"loss_rate of link {lk.name} must be in [0, 1)")
    for p in topology.paths:
        for end in (p.source, p.destination):
            if end not in sites:
                raise PlanInputError(f"path {p.source}->{p.destination}: unknown site {end!r}")
        if not p.links:
            raise PlanInputError(f"path {p.source}->{p.destination}: links is empty")
        for name in p.links:
            if name not in links:
                raise PlanInputError(f"path {p.source}->{p.destination}: unknown link {name!r}")
    for s in topology.sites:
        for field in ("share_weight", "budget_per_telescope_bps", "peak_bps"):
            value = getattr(s, field)
            if not (_finite(value) and value >= 0):
                raise PlanInputError(f"{field} of site {s.name} must be a non-negative number")
    for t in topology.telescopes:
        if t.access_link not in links:
            raise PlanInputError(f"access_link of telescope {t.name}: unknown link {t.access_link!r}")
        if not (_finite(t.sdp_buffer_bytes) and t.sdp_buffer_bytes > 0):
            raise PlanInputError(f"sdp_buffer_bytes of telescope {t.name} must be positive")
        if not (_finite(t.daily_volume_bytes) and t.daily_volume_bytes > 0):
            raise PlanInputError(f"daily_volume_bytes of telescope {t.name} must be positive")
        srcs = share_sites(topology)
        for site in t.share_sites:
            if site not in srcs:
                raise PlanInputError(
                    f"share_sites of telescope {t.name}: {site!r} is not an SRC with a share"
                )
        for site in t.share_sites or srcs:
            if topology.path(t.name, site) is None:
                raise PlanInputError(f"sites: no path from {t.name} to {site}")
    if not (_finite(topology.window_bytes) and topology.window_bytes > 0):
        raise PlanInputError("window_bytes must be positive")


def validate_products(products: Sequence[Product], topology: Topology) -> None:
    telescopes = {t.name for t in topology.telescopes}
    seen: set[str] = set()
    for p in products:
        if not p.id:
            raise PlanInputError("id: a product needs a non-empty id")
        if p.id in seen:
            raise PlanInputError(f"id: product {p.id!r} appears twice")
        seen.add(p.id)
        if p.telescope not in telescopes:
            raise PlanInputError(f"telescope of product {p.id}: unknown site {p.telescope!r}")
        if not (_finite(p.size_bytes) and p.size_bytes > 0):
            raise PlanInputError(f"size_bytes of product {p.id} must be positive, got {p.size_bytes!r}")
        if not (_finite(p.arrival_s) and p.arrival_s >= 0):
            raise PlanInputError(f"arrival_s of product {p.id} must be a non-negative number")
        if not 1 <= p.priority <= 5:
            raise PlanInputError(f"priority of product {p.id} must be 1 to 5, got {p.priority!r}")
        if p.deadline_s is not None and not (_finite(p.deadline_s) and p.deadline_s >= p.arrival_s):
            raise PlanInputError(f"deadline_s of product {p.id} must not precede its arrival")
        if p.files < 1:
            raise PlanInputError(f"files of product {p.id} must be at least 1")
        if p.file_bytes and (
            len(p.file_bytes) != p.files
            or not all(_finite(b) and b > 0 for b in p.file_bytes)
            or not math.isclose(sum(p.file_bytes), p.size_bytes, rel_tol=1e-6)
        ):
            raise PlanInputError(
                f"file_bytes of product {p.id} must be its {p.files} files' positive sizes, "
                f"adding up to its size_bytes"
            )
        if p.destination is not None and p.destination not in share_sites(topology):
            raise PlanInputError(
                f"destination of product {p.id}: {p.destination!r} is not an SRC with a share"
            )
        own = topology.telescope(p.telescope).share_sites
        if p.destination is not None and own and p.destination not in own:
            raise PlanInputError(
                f"destination of product {p.id}: {p.destination!r} is not one of {p.telescope}'s share_sites"
            )


def validate_config(config: PlanConfig) -> None:
    for field in ("slot_seconds", "per_file_bps"):
        if not (_finite(getattr(config, field)) and getattr(config, field) > 0):
            raise PlanInputError(f"{field} must be positive")
    if not 0 < config.target_utilisation <= 1:
        raise PlanInputError("target_utilisation must be in (0, 1]")
    for field in ("subslots", "max_streams", "max_files", "max_streams_per_file", "mss_bytes"):
        if getattr(config, field) < 1:
            raise PlanInputError(f"{field} must be at least 1")
    for field in ("copy_overhead_s", "copy_setup_rtts"):
        if not (_finite(getattr(config, field)) and getattr(config, field) >= 0):
            raise PlanInputError(f"{field} must be a non-negative number")
    if not (_finite(config.initial_window_bytes) and config.initial_window_bytes > 0):
        raise PlanInputError("initial_window_bytes must be positive")


def validate_state(state: LiveState, topology: Topology) -> None:
    links = {lk.name for lk in topology.links}
    for name, load in state.link_load_bps.items():
        if name not in links:
            raise PlanInputError(f"link_load_bps: unknown link {name!r}")
        if not (_finite(load) and load >= 0):
            raise PlanInputError(f"link_load_bps of {name} must be a non-negative number")
    for name, measured in (("measurements", state.measurements), ("running", state.running)):
        for m in measured:
            if m.streams < 1 or not (_finite(m.throughput_bps) and m.throughput_bps >= 0):
                raise PlanInputError(f"{name}: bad measurement on {m.source}->{m.destination}")
            ends_bad = any(t is not None and not _finite(t) for t in (m.start_s, m.end_s))
            if ends_bad or (m.start_s is not None and m.end_s is not None and m.end_s < m.start_s):
                raise PlanInputError(f"{name}: bad span on {m.source}->{m.destination}")


def validate_all(
    products: Sequence[Product],
    topology: Topology,
    policy: ReplicaPolicy,
    state: LiveState,
    config: PlanConfig,
) -> None:
    validate_topology(topology)
    validate_policy(policy, topology)
    validate_relays(policy, config.relays)
    validate_products(products, topology)
    validate_config(config)
    validate_state(state, topology)
