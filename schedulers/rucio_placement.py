"""The push loop in Rucio mode (``SRCNET_PUSH_THROUGH=rucio``): a due leg becomes a Rucio rule instead of a
transfer job, so Rucio's own daemons carry out what the plan decided, when the plan decided it.

The plan still sets the lane's link limits through the transfertool (FTS3's ``/config/links``) on the FTS3
endpoint the RSEs name (``fts`` attribute): Rucio's conveyor submits there, so its jobs obey the same limits
as the platform's own, and the plan's streams per copy are the link's ``nostreams``, which the endpoint
gives each copy whose job asks none (Rucio's never do). The rule carries the product's priority and the
plan's activity (which Rucio's ``[packet-marking]`` turns into each file's ``scitag``); Rucio chooses the
source (the product's SDP RSE) and submits one job per rule. Rucio chooses every copy's path, so plans in
Rucio mode make no relay legs (``PlanConfig.relays``) and a relayed leg is refused, never dropped; pacing
(a parameter of the source URL, which the conveyor builds) does not reach Rucio's copies. The replica the
loop created is followed by ``replicas.follow_rucio_rules`` like any other rule's, keeping the plan's reason
in front of the rule's. docs/rucio.md, "What of the plan reaches Rucio's copies"."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from transfertools.interface import TransfertoolError

RUCIO = "rucio"


def through_rucio() -> bool:
    """Whether the push loop places through Rucio rules rather than submitting transfer jobs."""
    return str(getattr(settings, "SRCNET_PUSH_THROUGH", "transfertool")).lower() == RUCIO


def place_by_rule(product: Any, destination: Any, replica: Any, *, activity: str) -> str:
    """One rule for ``product``'s dataset at ``destination`` (registering the product in Rucio first if
    needed); returns the rule id. A Rucio that refuses is the cycle's error for this telescope."""
    from replicas.rucio import RucioAdapter, RucioAdapterError

    try:
        adapter = RucioAdapter.from_env()
        adapter.register_product(product)
        rule = adapter.place_product(product, [destination], activity=activity, policy=replica.policy)
    except RucioAdapterError as exc:
        raise TransfertoolError(f"Rucio refused the placement of {product.did}: {exc}") from exc
    return str(rule.rule_id)
