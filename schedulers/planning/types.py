"""The planner's pure input and output types (no Django): topology, products, live state, plan.

Rates are bit/s, sizes bytes, times seconds from the start of the planning horizon."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from enum import StrEnum


class PlanInputError(ValueError):
    """Planner input is malformed; the message names the offending field or site."""


class PlanMode(StrEnum):
    PARALLEL = "parallel"  # every lane carries its share continuously
    SLOT = "slot"  # burst switching: a few lanes at full rate for their share of each slot


class LegRole(StrEnum):
    PRIMARY = "primary"  # telescope -> the SRC that keeps the replica
    RELAY = "relay"  # telescope -> distribution centre (a transient copy)
    FORWARD = "forward"  # distribution centre -> SRC
    SECOND = "second"  # SRC -> partner SRC (second replica or full copy)


@dataclass(frozen=True)
class LinkSpec:
    name: str
    capacity_bps: float
    rtt_ms: float
    loss_rate: float = 0.0
    opex_eur_per_year: float = 0.0
    a_end: str = ""
    b_end: str = ""


@dataclass(frozen=True)
class PathSpec:
    """A path between two storage sites as an ordered tuple of link names (flattened metrics derive)."""

    source: str
    destination: str
    links: tuple[str, ...]


@dataclass(frozen=True)
class SiteSpec:
    """A regional or distribution centre: its share of products and its budgets."""

    name: str
    share_weight: float = 1.0
    budget_per_telescope_bps: float = 20e9
    peak_bps: float = 70e9
    is_distribution_centre: bool = False
    # Its storage pulls third-party copies in blocks of this many bytes, one stream per block in flight
    # (HTTP-TPC: 16 MiB, topology/tpc_streams.py), so a copy runs no more streams than its file has blocks;
    # 0: any file runs the streams asked (root://).
    tpc_block_bytes: float = 0.0


@dataclass(frozen=True)
class TelescopeSpec:
    name: str
    access_link: str
    daily_volume_bytes: float = 1e15
    sdp_buffer_bytes: float = 2e15
    # The SRCs this telescope's first copies go to, each weighted by its share_weight (a campaign's
    # destinations for this telescope: planning.pinning); empty: every SRC with a share.
    share_sites: tuple[str, ...] = ()

    @property
    def sustained_bps(self) -> float:
        return self.daily_volume_bytes * 8 / 86400


@dataclass(frozen=True)
class Topology:
    """Everything the planner needs to know of the network; paths are looked up by (source, destination)."""

    telescopes: tuple[TelescopeSpec, ...]
    sites: tuple[SiteSpec, ...]
    links: tuple[LinkSpec, ...]
    paths: tuple[PathSpec, ...]
    window_bytes: float = 2**30

    def link(self, name: str) -> LinkSpec:
        return self._links[name]

    def path(self, source: str, destination: str) -> PathSpec | None:
        return self._paths.get((source, destination))

    def site(self, name: str) -> SiteSpec:
        return self._sites[name]

    def telescope(self, name: str) -> TelescopeSpec:
        return self._telescopes[name]

    def path_rtt_ms(self, path: PathSpec) -> float:
        return sum(self._links[n].rtt_ms for n in path.links)

    def path_capacity_bps(self, path: PathSpec) -> float:
        return min(self._links[n].capacity_bps for n in path.links)

    def directed_links(self, path: PathSpec) -> tuple[str, ...]:
        """Each hop as ``link>far-end``: links are full duplex, so each direction has its own capacity.

        A link whose ends are not known counts as one shared resource under its bare name."""
        here = path.source
        out = []
        for name in path.links:
            lk = self._links[name]
            if here == lk.a_end:
                here = lk.b_end
            elif here == lk.b_end:
                here = lk.a_end
            else:
                out.append(name)
                continue
            out.append(f"{name}>{here}")
        return tuple(out)

    def link_constraints(self) -> dict[str, tuple[str, float]]:
        """Every capacity constraint name -> (link name, capacity): both directions and the bare name."""
        out: dict[str, tuple[str, float]] = {}
        for lk in self.links:
            out[lk.name] = (lk.name, lk.capacity_bps)
            for end in (lk.a_end, lk.b_end):
                if end:
                    out[f"{lk.name}>{end}"] = (lk.name, lk.capacity_bps)
        return out

    def path_loss(self, path: PathSpec) -> float:
        delivered = 1.0
        for n in path.links:
            delivered *= 1.0 - self._links[n].loss_rate
        return 1.0 - delivered

    def with_link_capacity(self, capacities: Mapping[str, float]) -> Topology:
        """The same topology with some links' capacity replaced (failures, upgrades)."""
        links = tuple(replace(lk, capacity_bps=capacities.get(lk.name, lk.capacity_bps)) for lk in self.links)
        return Topology(self.telescopes, self.sites, links, self.paths, self.window_bytes)

    def scaled(self, scale: float) -> Topology:
        """The topology as a network ``scale`` times smaller carries it (the long-haul local network, a
        test bed): capacities, site budgets and peaks, telescope volumes and buffers divided by ``scale``;
        RTT, loss and TCP windows as they are."""
        if scale == 1:
            return self
        links = tuple(replace(lk, capacity_bps=lk.capacity_bps / scale) for lk in self.links)
        sites = tuple(
            replace(
                site,
                budget_per_telescope_bps=site.budget_per_telescope_bps / scale,
                peak_bps=site.peak_bps / scale,
            )
            for site in self.sites
        )
        telescopes = tuple(
            replace(
                tel,
                daily_volume_bytes=tel.daily_volume_bytes / scale,
                sdp_buffer_bytes=tel.sdp_buffer_bytes / scale,
            )
            for tel in self.telescopes
        )
        return Topology(telescopes, sites, links, self.paths, self.window_bytes)

    @property
    def _links(self) -> dict[str, LinkSpec]:
        return self._index()[0]

    @property
    def _paths(self) -> dict[tuple[str, str], PathSpec]:
        return self._index()[1]

    @property
    def _sites(self) -> dict[str, SiteSpec]:
        return self._index()[2]

    @property
    def _telescopes(self) -> dict[str, TelescopeSpec]:
        return self._index()[3]

    def _index(self) -> tuple[dict, dict, dict, dict]:  # type: ignore[type-arg]
        # Frozen dataclass: build the lookup tables once and keep them beside the fields.
        cached = self.__dict__.get("_cache")
        if cached is None:
            cached = (
                {lk.name: lk for lk in self.links},
                {(p.source, p.destination): p for p in self.paths},
                {s.name: s for s in self.sites},
                {t.name: t for t in self.telescopes},
            )
            object.__setattr__(self, "_cache", cached)
        return cached


@dataclass(frozen=True)
class Product:
    """A data product waiting in a telescope's SDP buffer."""

    id: str
    telescope: str
    size_bytes: float
    arrival_s: float = 0.0
    priority: int = 3
    deadline_s: float | None = None
    files: int = 1
    # Each file's bytes, in the order its copies are opened (a campaign's files are drawn between a least
    # and a most size); empty: the product split evenly between its files.
    file_bytes: tuple[float, ...] = ()
    # The SRC its first copy must go to (a campaign's destination, an operator's re-route): the planner
    # schedules it on that lane instead of choosing by share. Its site needs a share in the topology.
    destination: str | None = None


@dataclass(frozen=True)
class Measurement:
    """One observed transfer: what ``streams`` TCP streams achieved together on a path.

    ``paced_bps``: the rate the plan gave the transfer (its pace), if known; a transfer is judged against
    it, not against what its streams could have carried. ``copy_dead_s``: how much longer its copies took
    than their bytes at their share of the lane's planned rate (the mean over its files; None: not known),
    the measured counterpart of ``tuning.copy_dead_time_s``. ``start_s``/``end_s``: when it ran, in any
    one clock shared by the measurements (None: not known); ``link_limited``: a link of its path was full
    while it ran (``contention.mark_link_limited``), so what it fell short by was its share, not its
    streams."""

    source: str
    destination: str
    streams: int
    throughput_bps: float
    paced_bps: float | None = None
    copy_dead_s: float | None = None
    files: int = 1  # the copies it ran at once: each ran streams / files
    start_s: float | None = None
    end_s: float | None = None
    link_limited: bool = False


@dataclass(frozen=True)
class LiveState:
    """What is happening now: load outside the plan, measurements, what has been placed and sent."""

    now_s: float = 0.0
    link_load_bps: Mapping[str, float] = field(default_factory=dict)
    measurements: tuple[Measurement, ...] = ()
    # Transfers still running, each as what it has carried so far over its span up to then (start_s,
    # end_s in the measurements' clock): not measurements of their lanes, but load on the links they
    # cross while the measured transfers ran (contention.mark_link_limited).
    running: tuple[Measurement, ...] = ()
    placed_bytes: Mapping[str, float] = field(default_factory=dict)
    sdp_backlog_bytes: Mapping[str, float] = field(default_factory=dict)
    lane_busy_until_s: Mapping[tuple[str, str], float] = field(default_factory=dict)
    # Bytes each lane has to carry outside this plan: what is still to copy on its copies in flight, and
    # the products of other plans (the push loop plans each telescope, and its pinned products, apart).
    # The lanes share their telescope's target by it and this plan's products (planning.backlog).
    lane_backlog_bytes: Mapping[tuple[str, str], float] = field(default_factory=dict)
    # The mean size of the files of each lane's copies in flight: what the lane's copies in flight are
    # planned for when the plan has no leg of its own on the lane (Plan.lane_copies).
    lane_file_bytes: Mapping[tuple[str, str], float] = field(default_factory=dict)
    degraded_level: Mapping[str, int] = field(default_factory=dict)
    # Lanes that are broken now (schedulers/lane_health.py): rate 0, so no product is planned on them.
    unavailable_lanes: AbstractSet[tuple[str, str]] = frozenset()


@dataclass(frozen=True)
class PlanConfig:
    slot_seconds: float = 60.0
    target_utilisation: float = 0.97
    mode: PlanMode = PlanMode.PARALLEL
    subslots: int = 10
    max_streams: int = 16
    max_files: int = 8
    per_file_bps: float = 10e9
    max_streams_per_file: int = 4
    mss_bytes: int = 8948
    # What one copy costs before it carries the lane's rate (tuning.copies_at_once): a fixed overhead (the
    # transfer service's admission and the checksums: the measured gap between a lane's jobs is 0.13-0.2 s),
    # round trips before the first byte (TCP, TLS 1.2 and the third-party GET: 4), and slow start from the
    # initial window (10 segments of an MTU-1500 path).
    copy_overhead_s: float = 0.2
    copy_setup_rtts: float = 4.0
    initial_window_bytes: float = 14480.0
    # False: a lane keeps only one product's files in flight (the plan before the copy model).
    copies_in_flight: bool = True
    # True: a telescope's target is split among its lanes by their work in sight, so that they drain
    # together (planning.backlog); False (the default: measured no better on the long-haul network,
    # docs/benchmarks.md "Lanes that drain together"): by the policy's shares.
    drain_together: bool = False
    # False: the plan makes no relay legs (Rucio mode, where Rucio's conveyor chooses every copy's path:
    # docs/rucio.md, "What of the plan reaches Rucio's copies"). The RELAY degrade step is then not taken
    # (an event says so) and a distribution policy, which relays by definition, is refused.
    relays: bool = True


@dataclass(frozen=True)
class Window:
    """Part of every slot during which a lane sends: [offset, offset + duration) at rate_bps."""

    offset_s: float
    duration_s: float
    rate_bps: float


@dataclass(frozen=True)
class Lane:
    """A (source, destination) pair carrying one product at a time.

    ``rate_bps`` is its mean planned rate; in slot mode it sends only in ``windows``, at their rates."""

    source: str
    destination: str
    telescope: str | None
    links: tuple[str, ...]
    rtt_ms: float
    rate_bps: float
    windows: tuple[Window, ...] = ()

    @property
    def key(self) -> tuple[str, str]:
        return (self.source, self.destination)


@dataclass(frozen=True)
class Leg:
    """One copy of one product over one lane, in the order the lane sends them."""

    product_id: str
    role: LegRole
    source: str
    destination: str
    links: tuple[str, ...]
    streams: int
    files: int
    start_s: float
    start_slot: int
    finish_s: float
    rate_bps: float
    priority: int
    depends_on: int | None = None  # index of the leg that must deliver first
    cost_eur: float = 0.0
    size_bytes: float = 0.0
    # Copies the lane keeps in flight (its transfer-service link limit), across the products it carries at
    # once; ``files`` is this leg's own share of them (at most its product's files). 0: the same as files.
    lane_files: int = 0

    @property
    def lane_copies(self) -> int:
        return max(self.files, self.lane_files)


@dataclass(frozen=True)
class PlanEvent:
    time_s: float
    telescope: str
    kind: str  # "degrade" or "recover"
    detail: str


@dataclass(frozen=True)
class Plan:
    lanes: tuple[Lane, ...]
    legs: tuple[Leg, ...]
    events: tuple[PlanEvent, ...]
    replicas: Mapping[str, tuple[str, ...]]  # product id -> the SRCs that keep it
    degraded_level: Mapping[str, int] = field(default_factory=dict)
    # Lane -> the copies it keeps in flight under this plan (Planner.lane_copies): the transfer service's
    # limit for the lane, also where the plan has no new leg on it.
    lane_copies: Mapping[tuple[str, str], int] = field(default_factory=dict)
