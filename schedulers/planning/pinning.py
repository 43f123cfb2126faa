"""Planning products whose first copy is pinned (pure): a campaign's destinations, an operator's re-route.

The pinned SRCs share the telescope's access link (weight 1 each, every other SRC none), and each product
asks for that one copy: the policy's kind becomes one replica, except distribution, whose relay is how
the copy travels. The push loop's pinned plan and a simulated campaign both plan pinned products so."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from .policies import PolicyKind, ReplicaPolicy
from .types import Topology


def pinned_topology(
    topology: Topology, pins: Iterable[str], per_telescope: Mapping[str, Iterable[str]] | None = None
) -> Topology:
    """The topology as the pinned products see it: only the pinned SRCs have a share, an equal one.

    ``per_telescope``: a telescope's own pins, when several telescopes are planned at once (a simulated
    campaign); its lanes then go to those only, as the push loop, which plans one telescope at a time,
    sends them."""
    pinned = set(pins)
    sites = tuple(
        s if s.is_distribution_centre else replace(s, share_weight=1.0 if s.name in pinned else 0.0)
        for s in topology.sites
    )
    own = {name: tuple(sorted(set(names))) for name, names in (per_telescope or {}).items()}
    telescopes = tuple(replace(t, share_sites=own.get(t.name, t.share_sites)) for t in topology.telescopes)
    return replace(topology, sites=sites, telescopes=telescopes)


def pinned_policy(policy: ReplicaPolicy) -> ReplicaPolicy:
    """The policy for pinned products: one copy each (its relays and degrade order kept)."""
    if policy.kind == PolicyKind.DISTRIBUTION:
        return policy
    return replace(policy, kind=PolicyKind.ONE_REPLICA)
