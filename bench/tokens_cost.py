"""Benchmark: what tokens cost a copy.

The same small third-party copy (davs://, the destination pulls) run by the transfer service's executor
(transfers.executor.copy_file) three ways, interleaved round by round so that the machine's noise falls
on all three alike:
- ``plain``: between two sites that enforce no token, no token asked for (the baseline of the same run);
- ``tokens-new``: between two token-enforcing sites, both tokens asked of the issuer for this copy (a new
  client each time: two client-credentials grants per copy, the worst case);
- ``tokens-kept``: the same, with the process's client, which hands out the tokens it holds for the same
  directory and site (what a worker copying the files of one product does).
Reported: the median milliseconds per copy of each and its ratio to ``plain``.

Run: .venv/bin/python bench/tokens_cost.py [--copies 30] [--size-kib 64]
(needs root: the token-enforcing sites run in a mount namespace; starts the issuer and four XRootD sites in
the state ``bench-tokens`` and stops them after). Results: bench/results/tokens_cost-<date>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PREFIX = "/srcnet/"
PLAIN = ("BENCH-PLAIN-A", "BENCH-PLAIN-B")
TOKEN = ("BENCH-TOKEN-A", "BENCH-TOKEN-B")


def _url(site: Any, path: str) -> str:
    return f"davs://127.0.0.1:{site.http_port}{PREFIX}{path}"


def measure(
    sites: dict[str, Any],
    audiences: dict[str, str],
    new_client: Callable[[], Any],
    kept_client: Any,
    *,
    copies: int,
    size: int,
) -> dict[str, Any]:
    """Run ``copies`` rounds of the three ways and return the medians and ratios (the sites are registered
    storage endpoints; ``new_client`` makes a token client with nothing kept)."""
    from transfers.executor import copy_file
    from transfers.tokens import tokens_for_copy

    data = os.urandom(size)
    run = uuid.uuid4().hex[:8]  # a folder of this run's own at the destinations
    for name in (PLAIN[0], TOKEN[0]):
        folder = sites[name].local_path(f"{PREFIX}bench")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "source.dat").write_bytes(data)
    seconds: dict[str, list[float]] = {"plain": [], "tokens-new": [], "tokens-kept": []}
    failures: list[str] = []
    for round_number in range(copies):
        for way in seconds:
            source_site, destination_site = PLAIN if way == "plain" else TOKEN
            source = _url(sites[source_site], "bench/source.dat")
            destination = _url(sites[destination_site], f"bench/{run}/copy-{way}-{round_number}.dat")
            started = time.perf_counter()
            tokens = None
            if way != "plain":
                client = new_client() if way == "tokens-new" else kept_client
                tokens = tokens_for_copy(source, destination, client=client)
            outcome = copy_file(
                source=source, destination=destination, tokens=tokens, timeout=60, verify="none"
            )
            elapsed = time.perf_counter() - started
            if not outcome.ok:
                failures.append(f"{way}: {outcome.error}")
                continue
            seconds[way].append(elapsed)
    medians = {
        way: statistics.median(values) * 1000 if values else float("nan") for way, values in seconds.items()
    }
    spread = {
        way: (statistics.quantiles(values, n=4)[2] - statistics.quantiles(values, n=4)[0]) * 1000
        if len(values) >= 4
        else float("nan")
        for way, values in seconds.items()
    }
    return {
        "copies": copies,
        "size_bytes": size,
        "median_ms": medians,
        "iqr_ms": spread,
        "ratio_to_plain": {way: medians[way] / medians["plain"] for way in medians},
        "token_cost_ms": {way: medians[way] - medians["plain"] for way in medians if way != "plain"},
        "failures": failures,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--copies", type=int, default=30)
    parser.add_argument("--size-kib", type=int, default=64)
    args = parser.parse_args()

    from localnet.issuer import allow_audience, ensure_issuer, issuer_settings, stop_issuer
    from localnet.stack import down, ensure_core, service_env
    from localnet.state import StateDir
    from localnet.xrootd import SiteTokens, ensure_site, stop_site

    state = StateDir.named("bench-tokens")
    ensure_core(state)
    os.environ.update(service_env(state, "bench-tokens"))
    import django

    django.setup()
    from django.core.management import call_command

    from localnet.binding import register_loopback_endpoints
    from transfers.tokens import TokenClient, client_for

    call_command("migrate", verbosity=0)
    issuer = ensure_issuer(state)
    try:
        sites, audiences = {}, {}
        for name in PLAIN:
            sites[name] = ensure_site(state, name, tokens=None)  # the baseline: a site without tokens
        for name in TOKEN:
            audiences[name] = f"{name.lower()}.srcnet.bench"
            allow_audience(issuer, audiences[name])
            sites[name] = ensure_site(
                state,
                name,
                tokens=SiteTokens(issuers=(issuer.url,), audience=audiences[name], base_path=PREFIX),
            )
        register_loopback_endpoints("BenchSites", sites, PREFIX, audiences)
        settings = issuer_settings(state)
        assert settings is not None
        result = measure(
            sites,
            audiences,
            lambda: TokenClient(settings),
            client_for(settings),
            copies=args.copies,
            size=args.size_kib * 1024,
        )
    finally:
        for name in (*PLAIN, *TOKEN):
            stop_site(state, name)
        stop_issuer(state)
        down(state)
    result.update(
        {
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": f"{platform.node()} ({os.cpu_count()} cores)",
            "command": " ".join(["bench/tokens_cost.py", *sys.argv[1:]]),
        }
    )
    out = Path(__file__).resolve().parent / "results" / f"tokens_cost-{datetime.now(UTC):%Y-%m-%d}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    print(f"written to {out}")
    return 1 if result["failures"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
