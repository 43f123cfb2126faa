"""bench/tokens_cost.py's measurement with tiny sizes (its smoke run in make test: it cannot rot unseen)."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

from localnet.xrootd import ensure_site, stop_site
from transfers.tokens import TokenClient

from .conftest import PREFIX, TokenBench

BENCH = Path(__file__).resolve().parents[2] / "bench" / "tokens_cost.py"


def _bench_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("tokens_cost", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.django_db
def test_the_token_cost_benchmark_measures_all_three_ways(token_bench: TokenBench) -> None:
    from localnet.binding import register_loopback_endpoints

    bench = _bench_module()
    # The benchmark's baseline: sites without tokens (what the tokens cost is measured against them).
    plain = {name: ensure_site(token_bench.state, name, tokens=None) for name in bench.PLAIN}
    try:
        sites = {
            **plain,
            bench.TOKEN[0]: token_bench.sites["TOKEN-A"],
            bench.TOKEN[1]: token_bench.sites["TOKEN-B"],
        }
        audiences = {
            bench.TOKEN[0]: token_bench.audiences["TOKEN-A"],
            bench.TOKEN[1]: token_bench.audiences["TOKEN-B"],
        }
        register_loopback_endpoints("BenchSmoke", sites, PREFIX, audiences)
        issuer = token_bench.client.issuer
        result = bench.measure(
            sites, audiences, lambda: TokenClient(issuer), TokenClient(issuer), copies=2, size=4096
        )
    finally:
        for name in bench.PLAIN:
            stop_site(token_bench.state, name)
    assert result["failures"] == []
    assert set(result["median_ms"]) == {"plain", "tokens-new", "tokens-kept"}
    assert all(math.isfinite(v) and v > 0 for v in result["median_ms"].values())
    assert math.isclose(result["ratio_to_plain"]["plain"], 1.0)
