"""The four AENEAS replica scenarios as configurable policies (pure: no Django).

A policy turns a product and its primary SRC (chosen by weighted share, or by deadline) into routes: the
legs that carry it, in order. The distribution centre's copy is transient and is not a replica."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum

from .types import LegRole, PlanInputError, Topology


class PolicyKind(StrEnum):
    ONE_REPLICA = "one_replica"
    TWO_REPLICAS = "two_replicas"
    FULL_COPY = "full_copy"
    DISTRIBUTION = "distribution"


class DegradeStep(StrEnum):
    DEFER_SECOND_COPIES = "defer_second_copies"
    RELAY = "relay"


@dataclass(frozen=True)
class ReplicaPolicy:
    """A replica scenario and its parameters.

    ``partners``: SRC -> partner SRC for two_replicas (default: the next SRC by name, a ring).
    ``copy_site``: the SRC that holds a full copy (full_copy).
    ``relays``: telescope -> distribution centre (distribution; also the relay of the RELAY degrade step).
    ``relay_all``: relay every product, not only those whose direct path passes the centre's city.
    ``degrade_order``: what the planner gives up, in order, as the SDP buffer fills past ``degrade_at``
    (a fraction of the buffer); it returns to normal below ``recover_at``."""

    kind: PolicyKind = PolicyKind.ONE_REPLICA
    partners: Mapping[str, str] = field(default_factory=dict)
    copy_site: str | None = None
    relays: Mapping[str, str] = field(default_factory=dict)
    relay_all: bool = False
    degrade_order: tuple[DegradeStep, ...] = (DegradeStep.DEFER_SECOND_COPIES, DegradeStep.RELAY)
    degrade_at: float = 0.8
    recover_at: float = 0.5


@dataclass(frozen=True)
class Hop:
    source: str
    destination: str
    role: LegRole

    def source_destination(self) -> tuple[str, str]:
        return (self.source, self.destination)


def share_sites(topology: Topology) -> list[str]:
    """SRCs that take a share of each telescope's products, by name."""
    return sorted(s.name for s in topology.sites if s.share_weight > 0 and not s.is_distribution_centre)


def normalised_shares(topology: Topology, telescope: str | None = None) -> dict[str, float]:
    """Each SRC's share of the first copies: of every telescope's, or of ``telescope``'s (its
    ``share_sites`` when it names some); none when no such SRC has a share."""
    names = share_sites(topology)
    if telescope is not None and topology.telescope(telescope).share_sites:
        names = [n for n in names if n in topology.telescope(telescope).share_sites]
    weights = {name: topology.site(name).share_weight for name in names}
    total = sum(weights.values())
    return {name: w / total for name, w in weights.items()} if total > 0 else {}


def partner_of(policy: ReplicaPolicy, topology: Topology, site: str) -> str:
    if site in policy.partners:
        return policy.partners[site]
    ring = share_sites(topology)
    return ring[(ring.index(site) + 1) % len(ring)]


def relay_passes(topology: Topology, telescope: str, centre: str, destination: str) -> bool:
    """Whether the direct path to ``destination`` runs through the centre's city (shares the centre path's
    links up to its last, campus, hop): only then does relaying save the long cable a second crossing."""
    to_centre = topology.path(telescope, centre)
    direct = topology.path(telescope, destination)
    if to_centre is None or direct is None:
        return False
    prefix = to_centre.links[:-1]
    return direct.links[: len(prefix)] == prefix


def routes(
    policy: ReplicaPolicy, topology: Topology, telescope: str, primary: str, *, relay: bool = False
) -> list[Hop]:
    """The hops that place one product whose share destination is ``primary``, in order."""
    centre = policy.relays.get(telescope)
    use_relay = centre is not None and (
        relay
        or (
            policy.kind == PolicyKind.DISTRIBUTION
            and (policy.relay_all or relay_passes(topology, telescope, centre, primary))
        )
    )
    if use_relay and centre is not None:
        hops = [Hop(telescope, centre, LegRole.RELAY), Hop(centre, primary, LegRole.FORWARD)]
    else:
        hops = [Hop(telescope, primary, LegRole.PRIMARY)]
    if policy.kind == PolicyKind.TWO_REPLICAS:
        hops.append(Hop(primary, partner_of(policy, topology, primary), LegRole.SECOND))
    elif policy.kind == PolicyKind.FULL_COPY and policy.copy_site and primary != policy.copy_site:
        hops.append(Hop(primary, policy.copy_site, LegRole.SECOND))
    return hops


def without_relays(policy: ReplicaPolicy) -> ReplicaPolicy:
    """The policy as a plan that makes no relay legs applies it (``PlanConfig.relays`` off): no centre to
    relay through, so neither the RELAY degrade step nor its lanes. A distribution policy, which relays by
    definition, is refused before (``validate_relays``)."""
    return replace(policy, relays={}) if policy.relays else policy


def validate_relays(policy: ReplicaPolicy, relays: bool) -> None:
    """Refuse a policy whose every product must be relayed when the plan may make no relay legs."""
    if not relays and policy.kind == PolicyKind.DISTRIBUTION:
        raise PlanInputError(
            "relays: a distribution policy relays its products through a distribution centre, and this plan"
            " may make no relay legs (Rucio mode: Rucio's conveyor chooses each copy's path; docs/rucio.md);"
            " give the telescope another policy kind, or push through the transfertool"
            " (SRCNET_PUSH_THROUGH=transfertool)"
        )


def replicas_of(hops: list[Hop]) -> tuple[str, ...]:
    """The SRCs that keep the product: every hop's destination except a distribution centre's relay."""
    return tuple(h.destination for h in hops if h.role != LegRole.RELAY)


def validate_policy(policy: ReplicaPolicy, topology: Topology) -> None:
    """Reject a policy that names unknown sites or sites no path reaches, naming the field and site."""
    names = {s.name for s in topology.sites}
    telescopes = {t.name for t in topology.telescopes}
    srcs = share_sites(topology)
    if not srcs:
        raise PlanInputError("sites: no SRC has a positive share_weight")
    for tel, centre in sorted(policy.relays.items()):
        if tel not in telescopes:
            raise PlanInputError(f"relays: unknown telescope {tel!r}")
        if centre not in names:
            raise PlanInputError(f"relays: unknown site {centre!r}")
        if topology.path(tel, centre) is None:
            raise PlanInputError(f"relays: no path from {tel} to {centre}")
        for src in srcs:
            if topology.path(centre, src) is None and relay_passes(topology, tel, centre, src):
                raise PlanInputError(f"relays: no path from {centre} to {src}")
    if policy.kind == PolicyKind.DISTRIBUTION and not policy.relays:
        raise PlanInputError("relays: the distribution policy needs a centre per telescope")
    if policy.kind == PolicyKind.FULL_COPY:
        if policy.copy_site is None:
            raise PlanInputError("copy_site: the full_copy policy needs a site")
        if policy.copy_site not in names:
            raise PlanInputError(f"copy_site: unknown site {policy.copy_site!r}")
        for src in srcs:
            if src != policy.copy_site and topology.path(src, policy.copy_site) is None:
                raise PlanInputError(f"copy_site: no path from {src} to {policy.copy_site}")
    if policy.kind == PolicyKind.TWO_REPLICAS:
        for src, partner in sorted(policy.partners.items()):
            for name in (src, partner):
                if name not in names:
                    raise PlanInputError(f"partners: unknown site {name!r}")
        for src in srcs:
            partner = partner_of(policy, topology, src)
            if partner == src:
                raise PlanInputError(f"partners: {src} cannot be its own partner")
            if topology.path(src, partner) is None:
                raise PlanInputError(f"partners: no path from {src} to {partner}")
    if not 0 < policy.recover_at < policy.degrade_at <= 1:
        raise PlanInputError("degrade_at/recover_at: need 0 < recover_at < degrade_at <= 1")
