"""The token doctor as operators run it (``srcnet tokens check``, ``GET /api/operations/tokens/check/``):
for each lane the push plan uses (or one lane, or one storage endpoint), the checks of
``transfers/token_doctor.py`` (docs/tokens.md)."""

from __future__ import annotations

from typing import Any

from django.db.models import Max

from replicas.models import ProductFile
from replicas.services import active_policy
from schedulers.plan_settings import plan_config
from schedulers.planning.lanes import lane_demands
from schedulers.snapshot import planner_policy, policy_topology, topology_snapshot
from topology.choices import SiteKind, StorageRole, landing_role
from topology.models import Site, StorageEndpoint, Telescope
from transfers.token_doctor import (
    DEFAULT_LARGEST_FILE,
    Finding,
    LaneToCheck,
    check_clock,
    check_endpoint,
    check_issuer,
    check_lane,
)
from transfers.tokens import TokenClient, settings_from_django


class UnknownTarget(ValueError):
    """The lane or endpoint asked for is not known; the message names it."""


def check(target: str = "") -> list[Finding]:
    """Every finding for ``target``: ``SOURCE:DESTINATION`` (storage endpoint names), one endpoint's name,
    or "" for every lane of the plan."""
    issuer = settings_from_django()
    if issuer is None:
        return [
            Finding(
                "issuer",
                "SRCNET_TOKENS",
                False,
                "no token issuer is configured: copies carry no token, and token-enforcing storage "
                "refuses them",
                "set SRCNET_TOKEN_ISSUER, SRCNET_TOKEN_CLIENT_ID and SRCNET_TOKEN_CLIENT_SECRET",
            )
        ]
    lanes, endpoints = _targets(target)
    findings = check_issuer(issuer)
    if not all(f.ok for f in findings):
        return findings  # nothing else can be tried without the issuer
    client = TokenClient(issuer)
    findings += check_clock(client)
    for endpoint in endpoints:
        findings += check_endpoint(client, endpoint, write=True)
    for lane in lanes:
        findings += check_lane(client, lane)
    return findings


def _targets(target: str) -> tuple[list[LaneToCheck], list[Any]]:
    if not target:
        return planned_lanes(), []
    if ":" in target:
        source_name, _, destination_name = target.partition(":")
        found = {e.name: e for e in StorageEndpoint.objects.filter(name__in=[source_name, destination_name])}
        for name in (source_name, destination_name):
            if name not in found:
                raise UnknownTarget(f"no storage endpoint is named {name!r}")
        rates = {(lane.source.name, lane.destination.name): lane.rate_bps for lane in planned_lanes()}
        rate = rates.get((source_name, destination_name), 0.0)
        return [LaneToCheck(found[source_name], found[destination_name], rate, largest_file())], []
    endpoint = StorageEndpoint.objects.filter(name=target).first()
    if endpoint is None:
        raise UnknownTarget(f"no storage endpoint or lane is named {target!r} (a lane is SOURCE:DESTINATION)")
    return [], [endpoint]


def largest_file() -> int:
    return int(ProductFile.objects.aggregate(largest=Max("size_bytes"))["largest"] or DEFAULT_LARGEST_FILE)


def planned_lanes() -> list[LaneToCheck]:
    """The lanes the replica policies send over (source and destination storage endpoints) and their
    planned rates, as the push plan reckons them."""
    topology = topology_snapshot()
    config = plan_config()
    rates: dict[tuple[str, str], float] = {}
    for telescope in Telescope.objects.order_by("name"):
        stored = active_policy(telescope, create=False)
        weighed = policy_topology(stored, topology)
        for key, demand in lane_demands(planner_policy(stored, topology), weighed, config).items():
            rates[key] = rates.get(key, 0.0) + demand.demand_bps
    sites = {s.name: s for s in Site.objects.filter(name__in={n for key in rates for n in key})}
    endpoints = StorageEndpoint.objects.filter(is_active=True)
    by_site_role = {(e.site_id, e.role): e for e in endpoints}
    largest = largest_file()
    lanes = []
    for (source_site, destination_site), rate in sorted(rates.items()):
        source, destination = sites.get(source_site), sites.get(destination_site)
        if source is None or destination is None:
            continue
        source_role = (
            StorageRole.SDP if source.kind == SiteKind.TELESCOPE else landing_role(_is_centre(source))
        )
        source_endpoint = by_site_role.get((source.pk, source_role))
        destination_endpoint = by_site_role.get((destination.pk, landing_role(_is_centre(destination))))
        if source_endpoint is not None and destination_endpoint is not None:
            lanes.append(LaneToCheck(source_endpoint, destination_endpoint, rate, largest))
    return lanes


def _is_centre(site: Any) -> bool:
    return bool(site.kind == SiteKind.DISTRIBUTION_CENTRE)
