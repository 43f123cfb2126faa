"""A campaign's workload (pure: no Django): the target curve and the products that follow it.

Real and simulated campaigns both take their products from here, so they cannot drift apart: product
``index`` comes from source ``sources[index % len(sources)]``, goes to ``destinations[index % len(...)]``
and has ``files_per_product`` files of sizes drawn uniformly in [min, max] bytes from a generator seeded
with ``seed * 1_000_003 + index`` (each file's size, then the seed of its contents). A product is offered
as soon as the bytes offered before it fall below the curve: a real campaign's tick makes products while
``generated < planned_bytes_at(now)``, and a simulated campaign's product arrives at the instant the curve
passes the bytes offered before it (the same rule with ticks of zero length)."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


def planned_bytes_at(
    target_rate_bps: float, ramp_seconds: float, duration_seconds: float, elapsed: float
) -> float:
    """Bytes the target asks for after ``elapsed`` active seconds: a linear ramp, then the flat rate."""
    t = max(0.0, min(elapsed, duration_seconds))
    per_second = target_rate_bps / 8
    ramp = ramp_seconds or 0.0
    if ramp and t < ramp:
        return per_second * t * t / (2 * ramp)
    return per_second * (t - ramp / 2)


def target_rate_at(target_rate_bps: float, ramp_seconds: float, elapsed: float) -> float:
    ramp = ramp_seconds or 0.0
    if ramp and elapsed < ramp:
        return target_rate_bps * max(elapsed, 0.0) / ramp
    return target_rate_bps


def seconds_to_plan(target_rate_bps: float, ramp_seconds: float, planned: float) -> float:
    """The first active second at which the curve reaches ``planned`` bytes (the inverse of the curve,
    not clipped at the duration)."""
    per_second = target_rate_bps / 8
    ramp = ramp_seconds or 0.0
    b = max(0.0, planned)
    if ramp and b < per_second * ramp / 2:
        return math.sqrt(2 * ramp * b / per_second)
    return b / per_second + ramp / 2


@dataclass(frozen=True)
class WorkloadFile:
    size_bytes: int
    seed: int  # of its contents (campaigns.synthetic.write_file)


@dataclass(frozen=True)
class WorkloadProduct:
    index: int
    source: str  # as the campaign names it: a telescope or an SDP endpoint
    destination: str  # a storage endpoint name
    files: tuple[WorkloadFile, ...]

    @property
    def size_bytes(self) -> int:
        return sum(f.size_bytes for f in self.files)


@dataclass(frozen=True)
class Workload:
    """What a campaign asks for; ``Workload.of(campaign)`` reads it from a Campaign (or anything with
    the same attributes)."""

    seed: int
    sources: tuple[str, ...]
    destinations: tuple[str, ...]
    target_rate_bps: float
    ramp_seconds: float
    duration_seconds: float
    min_file_bytes: int
    max_file_bytes: int
    files_per_product: int

    @classmethod
    def of(cls, campaign: Any) -> Workload:
        return cls(
            seed=int(campaign.pk or 0),
            sources=tuple(campaign.sources),
            destinations=tuple(campaign.destinations),
            target_rate_bps=float(campaign.target_rate_bps),
            ramp_seconds=float(campaign.ramp_seconds or 0.0),
            duration_seconds=float(campaign.duration_seconds),
            min_file_bytes=int(campaign.min_file_bytes),
            max_file_bytes=int(campaign.max_file_bytes),
            files_per_product=int(campaign.files_per_product),
        )

    def planned_bytes_at(self, elapsed: float) -> float:
        return planned_bytes_at(self.target_rate_bps, self.ramp_seconds, self.duration_seconds, elapsed)

    def target_rate_at(self, elapsed: float) -> float:
        return target_rate_at(self.target_rate_bps, self.ramp_seconds, elapsed)

    def product(self, index: int) -> WorkloadProduct:
        """Product ``index``: its source, destination and files (sizes and content seeds)."""
        rng = random.Random(self.seed * 1_000_003 + index)  # reproducible sizes and contents
        files = []
        for _ in range(self.files_per_product):
            size = rng.randint(self.min_file_bytes, self.max_file_bytes)
            files.append(WorkloadFile(size, rng.randrange(1 << 30)))
        return WorkloadProduct(
            index,
            self.sources[index % len(self.sources)],
            self.destinations[index % len(self.destinations)],
            tuple(files),
        )

    def due(self, offered_bytes: float, first_index: int, elapsed: float) -> Iterator[WorkloadProduct]:
        """The products owed at ``elapsed`` when ``offered_bytes`` have been offered as products
        ``0 .. first_index - 1``: the next ones, until the bytes offered reach the curve."""
        owed = self.planned_bytes_at(elapsed)
        index = first_index
        while offered_bytes < owed:
            product = self.product(index)
            yield product
            offered_bytes += product.size_bytes
            index += 1

    def arrivals(self) -> Iterator[tuple[float, WorkloadProduct]]:
        """Every product of the whole campaign with the active second it is offered at."""
        offered = 0.0
        for product in self.due(0.0, 0, self.duration_seconds):
            yield seconds_to_plan(self.target_rate_bps, self.ramp_seconds, offered), product
            offered += product.size_bytes

    def expected_products(self) -> float:
        """About how many products the whole campaign makes (planned bytes / mean product size)."""
        mean = self.files_per_product * (self.min_file_bytes + self.max_file_bytes) / 2
        return self.planned_bytes_at(self.duration_seconds) / max(mean, 1.0)

    def source_shares(self) -> dict[str, float]:
        """Each source's share of the products (round-robin: its count in ``sources`` / their number)."""
        return _shares(self.sources)

    def destination_shares(self) -> dict[str, float]:
        """Each destination's share of the products, in the order the campaign first names them."""
        return _shares(self.destinations)

    def pairs(self) -> list[tuple[str, str]]:
        """The (source, destination) pairs the round-robin uses, in order of first use."""
        seen: dict[tuple[str, str], None] = {}
        cycle = math.lcm(len(self.sources), len(self.destinations))
        for index in range(cycle):
            seen.setdefault(
                (self.sources[index % len(self.sources)], self.destinations[index % len(self.destinations)])
            )
        return list(seen)


def _shares(names: tuple[str, ...]) -> dict[str, float]:
    shares: dict[str, float] = {}
    for name in names:
        shares[name] = shares.get(name, 0.0) + 1 / len(names)
    return shares
