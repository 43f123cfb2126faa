"""Factories of the core rows the tests need, one definition each (issue 34): a product as the SDP
registers it, through the platform's own service (its files and its AVAILABLE SDP replica with it)."""

from __future__ import annotations

from collections.abc import Sequence

from replicas.models import DataProduct
from replicas.services import FileSpec, register_product
from topology.models import Telescope

# Any well-formed adler32: the tests that copy bytes write their own files and sums.
ADLER32 = "0cc737eb"


def product_at_sdp(
    name: str,
    *,
    sizes: Sequence[int] = (10**6,),
    telescope: str = "SKA1-Low",
    scope: str = "ska",
    priority: int = 3,
    file_names: Sequence[str] | None = None,
) -> DataProduct:
    """A product at ``telescope``'s SDP with one file per size (``a.ms``, ``b.ms``... unless named)."""
    names = (
        list(file_names) if file_names is not None else [f"{chr(ord('a') + i)}.ms" for i in range(len(sizes))]
    )
    if len(names) != len(sizes):
        raise ValueError("one file name per size")
    return register_product(
        scope=scope,
        name=name,
        telescope=Telescope.objects.get(name=telescope),
        priority=priority,
        files=[FileSpec(file, size, ADLER32) for file, size in zip(names, sizes, strict=True)],
    )
