"""The demo's Rucio mode: a real Rucio server on the same PostgreSQL, products registered in Rucio, rules
placed by the platform's policy, Rucio's conveyor handing the copies to the embedded FTS3 service (HTTPS,
client certificate) and the replicas appearing in Rucio and in the portal. Needs Django set up."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from typing import Any

from .state import StateDir

CONVEYOR_IDENTITY = "rucio-conveyor"


def _say(message: str) -> None:
    print(f"[{datetime.now(UTC).strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def prepare(state: StateDir, name: str) -> dict[str, Any]:
    """Rucio server, the FTS3 endpoint it uses, the conveyor's identity, and every endpoint as an RSE."""
    from django.contrib.auth import get_user_model

    from replicas.rucio import RucioAdapter, RucioConfig
    from srcnet.roles import grant_submit_transfers
    from topology.models import StorageEndpoint
    from transfers.models import ClientIdentity

    from .fts3 import ensure_fts3
    from .pki import ensure_client_cert
    from .rucio import ensure_rucio

    server = ensure_rucio(state)
    fts_url = ensure_fts3(state, name)
    cert, dn = ensure_client_cert(state, CONVEYOR_IDENTITY)
    user, _ = get_user_model().objects.get_or_create(username=CONVEYOR_IDENTITY)
    grant_submit_transfers(user)
    ClientIdentity.objects.update_or_create(dn=dn, defaults={"user": user})
    adapter = RucioAdapter(RucioConfig(**server.client_kwargs()))
    endpoints = list(StorageEndpoint.objects.filter(is_active=True).select_related("site"))
    rses, _ = adapter.sync_endpoints(endpoints, fts_url=fts_url)
    _say(
        f"Rucio {adapter.ping()} at {server.url}: {len(rses)} RSEs with fts={fts_url}; "
        f"conveyor authenticates as {dn}"
    )
    return {"server": server, "adapter": adapter, "cert": cert, "fts_url": fts_url}


def push(rucio: dict[str, Any], product_ids: list[int]) -> None:
    """Register each product in Rucio, turn its policy placement into a rule, run the conveyor until the
    rules leave REPLICATING, and bring the outcome back into the platform's replicas."""
    from replicas.models import DataProduct
    from schedulers.services import place_by_policy

    from .rucio import run_conveyor

    adapter = rucio["adapter"]
    rules = []
    products = list(DataProduct.objects.filter(pk__in=product_ids))
    for product in products:
        adapter.register_product(product)
        place_by_policy(product=product)
        rules.append(adapter.place_planned(product, activity="SKA Data Products").rule_id)
    _say(f"{len(rules)} rules created; running Rucio's submitter, poller and finisher")
    summary = run_conveyor(rucio["server"], until_rules=rules, timeout=300, usercert=rucio["cert"])
    _say(f"conveyor: rules {summary.get('rules')}")
    for product in products:
        adapter.sync_product(product)
