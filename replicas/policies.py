"""Replica placement rules (pure: no Django).

1 replica by weighted share: each product goes, whole, to the SRC whose received volume is furthest
below its share of the volume placed so far, counting this product (a deficit round-robin over bytes).
It is deterministic (ties go to the first name in order) and converges: after any prefix of products,
each SRC's volume is within one product of its exact share.
"""

from __future__ import annotations

import math
from collections.abc import Mapping


class PolicyError(ValueError):
    """A policy cannot place a product (no eligible destination, bad weights)."""


def normalised_shares(weights: Mapping[str, float]) -> dict[str, float]:
    """Weights as fractions that add up to one; zero-weight destinations drop out."""
    for name, weight in weights.items():
        if not (isinstance(weight, int | float) and math.isfinite(weight) and weight >= 0):
            raise PolicyError(f"weight of {name} must be a non-negative number, got {weight!r}")
    total = sum(weights.values())
    if total <= 0:
        raise PolicyError("no destination has a positive weight")
    return {name: weight / total for name, weight in weights.items() if weight > 0}


def choose_by_weighted_share(weights: Mapping[str, float], placed_bytes: Mapping[str, int], size: int) -> str:
    """The destination for a product of ``size`` bytes, given the bytes each has received so far."""
    if size < 0:
        raise PolicyError(f"a product size cannot be negative ({size})")
    shares = normalised_shares(weights)
    total_after = sum(placed_bytes.get(name, 0) for name in shares) + size

    def deficit(name: str) -> float:
        return shares[name] * total_after - placed_bytes.get(name, 0)

    return max(sorted(shares), key=deficit)
