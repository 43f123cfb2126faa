"""Read the Django topology, the SDP queue and the stored replica policies into the planner's pure input
types.

This module and the simulate command are the only scheduler modules that touch the ORM; the planner and
the simulator see frozen dataclasses only. ``planner_policy`` is the one translation from a stored
``replicas.ReplicaPolicy`` to the planner's ``ReplicaPolicy``."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import replace

from django.conf import settings
from django.db.models import CharField, Count, Exists, OuterRef, QuerySet, Subquery, Sum, Value
from django.db.models.functions import Coalesce, Concat, Greatest

from replicas.choices import PolicyKind as StoredKind
from replicas.choices import ProductState, ReplicaState
from replicas.models import DataProduct, Replica
from replicas.models import ReplicaPolicy as StoredPolicy
from topology.choices import LinkKind, landing_role
from topology.models import Dtn, Link, NetworkPath, PathHop, RegionalCentre, StorageEndpoint, Telescope
from topology.tpc_streams import pull_block_bytes

from .planning.policies import DegradeStep, PolicyKind, routes
from .planning.policies import ReplicaPolicy as PlannerPolicy
from .planning.types import (
    LegRole,
    LinkSpec,
    PathSpec,
    PlanInputError,
    Product,
    SiteSpec,
    TelescopeSpec,
    Topology,
)

DEFAULT_WINDOW_BYTES = 2**30
# Where a telescope relays when its stored policy names no relay centre (the AENEAS distribution centres),
# used only if the topology has that centre.
REFERENCE_RELAYS = {"SKA1-Low": "SingaporeDC", "SKA1-Mid": "LondonDC"}
PLANNER_KINDS = {
    StoredKind.WEIGHTED_SHARE: PolicyKind.ONE_REPLICA,
    StoredKind.TWO_REPLICAS: PolicyKind.TWO_REPLICAS,
    StoredKind.FULL_COPY: PolicyKind.FULL_COPY,
    StoredKind.DISTRIBUTION: PolicyKind.DISTRIBUTION,
}


def tpc_block_bytes() -> dict[str, float]:
    """Site -> the block size its landing storage pulls third-party copies in (``pull_block_bytes`` of its
    scheme), for the endpoint copies land on there (``landing_role``, the first by name, as
    ``leg_submission.site_endpoint`` picks it)."""
    landing: dict[str, str] = {}
    rows = (
        StorageEndpoint.objects.filter(is_active=True)
        .order_by("site__name", "name")
        .values_list("site__name", "role", "tpc_scheme", "site__regionalcentre__is_distribution_centre")
    )
    for site, role, scheme, centre in rows:
        if centre is not None and role == landing_role(centre):
            landing.setdefault(site, scheme)
    return {site: float(pull_block_bytes(scheme)) for site, scheme in landing.items()}


def planner_policy(stored: StoredPolicy, topology: Topology) -> PlannerPolicy:
    """The planner's policy for a stored one (which is one telescope's): the same kind and parameters, the
    relay keyed by the stored policy's telescope. With no ``relay_centre``, the telescope's reference
    centre (``REFERENCE_RELAYS``) is its relay when the topology has that distribution centre."""
    telescope = stored.telescope.name
    centres = {s.name for s in topology.sites if s.is_distribution_centre}
    if stored.relay_centre_id is not None:
        centre: str | None = stored.relay_centre.name  # type: ignore[union-attr]
    else:
        fallback = REFERENCE_RELAYS.get(telescope)
        centre = fallback if fallback in centres else None
    return PlannerPolicy(
        kind=PLANNER_KINDS[StoredKind(stored.kind)],
        partners=dict(stored.partners or {}),
        copy_site=stored.copy_site.name if stored.copy_site_id is not None else None,  # type: ignore[union-attr]
        relays={telescope: centre} if centre else {},
        relay_all=stored.relay_all,
        degrade_order=tuple(DegradeStep(step) for step in stored.degrade_order),
        degrade_at=stored.degrade_at,
        recover_at=stored.recover_at,
    )


def policy_topology(stored: StoredPolicy, topology: Topology) -> Topology:
    """The topology as the stored policy weighs the SRCs. With explicit shares (``PolicyShare``, what an
    operator sets in the portal) an SRC's share weight is the sum of its storage endpoints' shares and an
    SRC without one gets no first copies; without explicit shares, the SRCs' own ``share_weight``. The
    explicit placement (``replicas.services.place_product``) reads the same shares, so both agree."""
    per_site: dict[str, float] = defaultdict(float)
    if stored.pk is None:  # the default policy of a telescope without one: never saved, no shares
        return topology
    for share in stored.shares.select_related("destination__site"):
        per_site[share.destination.site.name] += share.weight
    if not per_site:
        return topology
    sites = tuple(
        site if site.is_distribution_centre else replace(site, share_weight=per_site.get(site.name, 0.0))
        for site in topology.sites
    )
    return replace(topology, sites=sites)


def topology_snapshot() -> Topology:
    """The current topology: links that are down count with zero capacity; one path per site pair (the
    lowest-RTT stored one)."""
    links = list(Link.objects.select_related("a_end", "b_end").order_by("name"))
    link_specs = tuple(
        LinkSpec(
            name=lk.name,
            capacity_bps=float(lk.capacity_bps if lk.is_up else 0),
            rtt_ms=lk.rtt_ms,
            loss_rate=lk.loss_rate,
            opex_eur_per_year=lk.opex_eur_per_year,
            a_end=lk.a_end.name,
            b_end=lk.b_end.name,
        )
        for lk in links
    )
    telescopes = []
    for tel in Telescope.objects.order_by("name"):
        access = sorted(
            lk.name
            for lk in links
            if lk.kind == LinkKind.ACCESS and tel.name in (lk.a_end.name, lk.b_end.name)
        )
        if not access:
            continue  # a telescope with no access link cannot push; the planner then rejects its products
        telescopes.append(
            TelescopeSpec(tel.name, access[0], float(tel.daily_volume_bytes), float(tel.sdp_buffer_bytes))
        )
    blocks = tpc_block_bytes()
    sites = tuple(
        SiteSpec(
            name=rc.name,
            share_weight=rc.share_weight,
            budget_per_telescope_bps=float(rc.budget_per_telescope_bps),
            peak_bps=float(rc.peak_bps),
            is_distribution_centre=rc.is_distribution_centre,
            tpc_block_bytes=blocks.get(rc.name, 0.0),
        )
        for rc in RegionalCentre.objects.order_by("name")
    )
    storage = {t.name for t in telescopes} | {s.name for s in sites}
    paths: dict[tuple[str, str], PathSpec] = {}
    # Read as plain rows, not model instances: every cycle reads every path's hops, and building the
    # instances cost 180 ms a cycle (bench/control_plane, 2026-11-29).
    hops: dict[int, list[str]] = defaultdict(list)
    for path_id, link_name in PathHop.objects.order_by("path_id", "position").values_list(
        "path_id", "link__name"
    ):
        hops[path_id].append(link_name)
    for path_id, source, destination in NetworkPath.objects.order_by(
        "source__name", "destination__name", "rtt_ms", "name"
    ).values_list("pk", "source__name", "destination__name"):
        pair = (source, destination)
        if pair in paths or not set(pair) <= storage:
            continue
        names = tuple(hops.get(path_id, ()))
        if names:
            paths[pair] = PathSpec(pair[0], pair[1], names)
    windows = list(Dtn.objects.values_list("tcp_window_bytes", flat=True))
    window = float(min(windows)) if windows else float(DEFAULT_WINDOW_BYTES)
    topology = Topology(tuple(telescopes), sites, link_specs, tuple(paths[k] for k in sorted(paths)), window)
    # On a scaled-down network (the long-haul local network) the loop plans for what the wire carries.
    return topology.scaled(settings.SRCNET_NETWORK_SCALE)


def _pins() -> QuerySet[Replica]:
    """Pinned first copies: PLANNED replicas (no upstream) that a campaign or an operator's re-route put
    at a site, for the plan to carry their products there."""
    return Replica.objects.filter(state=ReplicaState.PLANNED, upstream__isnull=True)


def pinned_destinations() -> dict[int, str]:
    """Product id -> the site of its pinned first copy, for every queued product that has one."""
    rows = (
        _pins()
        .filter(product__state=ProductState.REGISTERED)
        .values_list("product_id", "endpoint__site__name")
    )
    return dict(rows)


def queued_products(*, now: dt.datetime, horizon: int | None = None) -> list[Product]:
    """Products registered at an SDP and not yet placed, with times in seconds from ``now`` and the site
    of their pinned first copy, if any: of each telescope's queue, the first ``horizon`` products in the
    planner's order (``SRCNET_PLAN_HORIZON_PRODUCTS`` unless given; ``head_of_queue``)."""
    return products_with_pins(head_of_queue(now, horizon or settings.SRCNET_PLAN_HORIZON_PRODUCTS), now=now)


def products_with_pins(ids: list[int], *, now: dt.datetime) -> list[Product]:
    """The products ``ids`` as the planner takes them, read in one statement."""
    products = []
    # The pin in the same statement as the product: a campaign commits a product with its pin, and two
    # statements could see the product but not its pin (committed between them), placing it by the policy.
    # (A product committed after ``ids`` were read waits for the next cycle.)
    pin_site = Subquery(_pins().filter(product=OuterRef("pk")).values("endpoint__site__name")[:1])
    queryset = (
        DataProduct.objects.filter(pk__in=ids, state=ProductState.REGISTERED)
        .select_related("telescope")
        .annotate(total=Sum("files__size_bytes"), nfiles=Count("files", distinct=True), pin_site=pin_site)
        .order_by("created", "scope", "name")
    )
    for p in queryset:
        if not p.total:
            continue  # nothing written yet: nothing to push
        deadline = (p.deadline - now).total_seconds() if p.deadline else None
        products.append(
            Product(
                id=p.did,
                telescope=p.telescope.name,
                size_bytes=float(p.total or 0),
                arrival_s=max(0.0, (p.created - now).total_seconds()),
                priority=p.priority,
                deadline_s=None if deadline is None else max(0.0, deadline),
                files=max(1, p.nfiles),
                destination=p.pin_site,
            )
        )
    return products


def queue_length() -> int:
    """Every product waiting at the SDPs to be handed on, beyond the horizon too."""
    return DataProduct.objects.filter(state=ProductState.REGISTERED).count()


def head_of_queue(now: dt.datetime, horizon: int) -> list[int]:
    """The ids of the first ``horizon`` products of each telescope's SDP queue, in the order the planner
    places them (``planning.planner.plan``): higher priority first, then the earlier deadline (a product
    without one: its arrival plus the time its SDP's buffer holds, the planner's own default), then the DID.

    A cycle plans these and leaves the rest for later cycles (a rolling horizon): the planner places
    products one after another in that order, so the plan of the head is the one the whole queue would have
    given it, at a cost that does not grow with the queue (a million products waiting cost a push cycle
    about 1 ms each when all were planned; bench/scheduler/push_cycle.py)."""
    ids: list[int] = []
    has_queue = Exists(DataProduct.objects.filter(telescope=OuterRef("pk"), state=ProductState.REGISTERED))
    for telescope in Telescope.objects.filter(has_queue):
        rate = telescope.daily_volume_bytes / 86400
        held_s = telescope.sdp_buffer_bytes / rate if rate > 0 else 0.0
        waiting = DataProduct.objects.filter(telescope=telescope, state=ProductState.REGISTERED)
        ordered = waiting.annotate(
            plan_deadline=Greatest(
                Coalesce("deadline", Greatest("created", Value(now)) + dt.timedelta(seconds=held_s)),
                Value(now),
            ),
            plan_id=Concat("scope", Value(":"), "name", output_field=CharField()),
        ).order_by("-priority", "plan_deadline", "plan_id")
        ids += ordered.values_list("pk", flat=True)[:horizon]
    return ids


def second_copy_site(stored: StoredPolicy, primary: str) -> str | None:
    """The SRC that gets the second (two_replicas) or full (full_copy) copy of a product of the stored
    policy's telescope whose first copy went to ``primary``; None when the policy asks for one copy."""
    if stored.kind not in (StoredKind.TWO_REPLICAS, StoredKind.FULL_COPY):
        return None
    topology = policy_topology(stored, topology_snapshot())
    policy = planner_policy(stored, topology)
    try:
        hops = routes(policy, topology, stored.telescope.name, primary)
    except ValueError as exc:  # not in the partner ring and not named in partners
        raise PlanInputError(f"partners: {stored.name} names no partner for {primary}") from exc
    return next((h.destination for h in hops if h.role == LegRole.SECOND), None)
