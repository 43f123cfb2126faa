"""The AENEAS scenarios as simulator runs (pure): policy, planning mode and an optional failure schedule."""

from __future__ import annotations

from dataclasses import dataclass

from ..planning.policies import PolicyKind, ReplicaPolicy
from ..planning.types import PlanConfig, PlanMode
from .engine import CapacityChange

RELAYS = {"SKA1-Low": "SingaporeDC", "SKA1-Mid": "LondonDC"}
FULL_COPY_SITE = "UKSRC"
CENTRE_EUR_PER_YEAR = 300_000.0  # AENEAS: about EUR 0.3 M/year per distribution centre


@dataclass(frozen=True)
class Scenario:
    name: str
    policy: ReplicaPolicy
    plan: PlanConfig
    description: str


def scenarios() -> dict[str, Scenario]:
    """Every scenario the simulate command knows, by name."""
    parallel = PlanConfig()
    # Slot mode sends in 60 s bursts (600 s slots of 10 sub-slots): long enough that a cold window's
    # ten-RTT slow start costs a few per cent, short enough that every SRC is served every slot.
    slotted = PlanConfig(mode=PlanMode.SLOT, slot_seconds=600.0, subslots=10)
    return {
        s.name: s
        for s in (
            Scenario(
                "one_replica",
                ReplicaPolicy(relays=RELAYS),
                parallel,
                "1 replica by weighted share, all SRCs in parallel",
            ),
            Scenario(
                "one_replica_slot",
                ReplicaPolicy(relays=RELAYS),
                slotted,
                "1 replica, burst switching: five SRCs at full rate per sub-slot",
            ),
            Scenario(
                "two_replicas",
                ReplicaPolicy(PolicyKind.TWO_REPLICAS, relays=RELAYS),
                parallel,
                "2 replicas: each SRC re-sends its share to its partner",
            ),
            Scenario(
                "full_copy",
                ReplicaPolicy(PolicyKind.FULL_COPY, copy_site=FULL_COPY_SITE, relays=RELAYS),
                parallel,
                f"full copy at {FULL_COPY_SITE}: every SRC forwards its share there",
            ),
            Scenario(
                "distribution",
                ReplicaPolicy(PolicyKind.DISTRIBUTION, relays=RELAYS),
                parallel,
                "relay through London (SKA1-Mid) and Singapore (SKA1-Low) distribution centres",
            ),
        )
    }


def reference_failures() -> tuple[CapacityChange, ...]:
    """A day with trouble: Singapore-London down 06:00-08:00, Cape Town-London at half 14:00-15:00."""
    return (
        CapacityChange(6 * 3600, "singapore-london", 0.0),
        CapacityChange(8 * 3600, "singapore-london", 100e9),
        CapacityChange(14 * 3600, "capetown-london", 50e9),
        CapacityChange(15 * 3600, "capetown-london", 100e9),
    )
