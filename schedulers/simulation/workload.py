"""Synthetic SDP output (pure): a telescope's products over a day, reproducible from a seed."""

from __future__ import annotations

import math
import random

from ..planning.types import Product, Topology


def daily_products(
    topology: Topology,
    *,
    days: float = 1.0,
    mean_size_bytes: float = 50e9,
    size_sigma: float = 0.5,
    warm_backlog_s: float = 3600.0,
    seed: int = 0,
) -> list[Product]:
    """Each telescope's products, written back to back at its daily volume (1 PB/day = 92.6 Gbit/s).

    Sizes are log-normal around ``mean_size_bytes``. A product arrives when the SDP has finished writing
    it. The first ``warm_backlog_s`` of output were written before the run starts and wait at t = 0: the
    SDP never starts a day empty in steady state."""
    products: list[Product] = []
    mu = math.log(mean_size_bytes) - size_sigma**2 / 2
    for index, tel in enumerate(sorted(topology.telescopes, key=lambda t: t.name)):
        rng = random.Random(seed * 1000 + index)
        rate = tel.daily_volume_bytes / 86400
        written = 0.0
        n = 0
        horizon = days * 86400
        while True:
            size = max(1e6, rng.lognormvariate(mu, size_sigma))
            written += size
            arrival = written / rate - warm_backlog_s
            if arrival > horizon:
                break
            products.append(Product(f"{tel.name}/{n:06d}", tel.name, size, max(0.0, arrival), files=8))
            n += 1
    return products
