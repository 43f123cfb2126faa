"""Read the Django topology (and the SDP queue) into the planner's pure input types.

This module and the simulate command are the only scheduler modules that touch the ORM; the planner and
the simulator see frozen dataclasses only."""

from __future__ import annotations

import datetime as dt

from django.db.models import Count, Prefetch, Sum

from replicas.choices import ProductState
from replicas.models import DataProduct
from topology.choices import LinkKind
from topology.models import Dtn, Link, NetworkPath, PathHop, RegionalCentre, Telescope

from .planning.types import LinkSpec, PathSpec, Product, SiteSpec, TelescopeSpec, Topology

DEFAULT_WINDOW_BYTES = 2**30


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
    sites = tuple(
        SiteSpec(
            name=rc.name,
            share_weight=rc.share_weight,
            budget_per_telescope_bps=float(rc.budget_per_telescope_bps),
            peak_bps=float(rc.peak_bps),
            is_distribution_centre=rc.is_distribution_centre,
        )
        for rc in RegionalCentre.objects.order_by("name")
    )
    storage = {t.name for t in telescopes} | {s.name for s in sites}
    paths: dict[tuple[str, str], PathSpec] = {}
    hops = Prefetch("hops", queryset=PathHop.objects.select_related("link").order_by("position"))
    for path in (
        NetworkPath.objects.select_related("source", "destination")
        .prefetch_related(hops)
        .order_by("source__name", "destination__name", "rtt_ms", "name")
    ):
        pair = (path.source.name, path.destination.name)
        if pair in paths or not set(pair) <= storage:
            continue
        names = tuple(hop.link.name for hop in path.hops.all())
        if names:
            paths[pair] = PathSpec(pair[0], pair[1], names)
    windows = list(Dtn.objects.values_list("tcp_window_bytes", flat=True))
    window = float(min(windows)) if windows else float(DEFAULT_WINDOW_BYTES)
    return Topology(tuple(telescopes), sites, link_specs, tuple(paths[k] for k in sorted(paths)), window)


def queued_products(*, now: dt.datetime) -> list[Product]:
    """Products registered at an SDP and not yet placed, with times in seconds from ``now``."""
    products = []
    queryset = (
        DataProduct.objects.filter(state=ProductState.REGISTERED)
        .select_related("telescope")
        .annotate(total=Sum("files__size_bytes"), nfiles=Count("files", distinct=True))
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
            )
        )
    return products
