"""Reads of the rules app: the rules an account may see, each rule's copies and its state."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet, Sum
from django.utils import timezone

from replicas.choices import ReplicaState
from replicas.models import Replica
from srcnet.roles import is_operator

from .choices import RuleState
from .models import Rule


def visible_rules(user: Any) -> QuerySet[Rule]:
    """An account's own rules; every rule for an operator."""
    rules = Rule.objects.select_related("owner").prefetch_related("products")
    return rules if is_operator(user) else rules.filter(owner=user)


def rule_replicas(rule: Rule) -> list[Replica]:
    """The copies the rule stands for: in embedded mode the replicas it placed or counted; in Rucio mode
    those the platform followed from its Rucio rules (``Replica.rucio_rule``)."""
    if rule.rucio_rules:
        queryset = Replica.objects.filter(
            rucio_rule__in=[str(r) for r in rule.rucio_rules.values()], product__in=rule.products.all()
        )
    else:
        queryset = rule.replicas.all()
    return list(
        queryset.select_related("product", "endpoint__site", "upstream__endpoint__site").order_by("id")
    )


def rule_state(rule: Rule, replicas: list[Replica]) -> str:
    """As Rucio says it: OK once every product has its copies, STUCK when one failed, else REPLICATING;
    EXPIRED after its lifetime."""
    if rule.expires_at is not None and rule.expires_at <= timezone.now():
        return RuleState.EXPIRED
    if any(r.state == ReplicaState.FAILED for r in replicas):
        return RuleState.STUCK
    available: dict[int, int] = {}
    for r in replicas:
        if r.state == ReplicaState.AVAILABLE and r.endpoint.name in rule.destinations:
            available[r.product_id] = available.get(r.product_id, 0) + 1
    products = [p.pk for p in rule.products.all()]
    if products and all(available.get(pk, 0) >= rule.copies for pk in products):
        return RuleState.OK
    return RuleState.REPLICATING


def rule_network(rule: Rule) -> dict[str, int]:
    """What the network carried for the rule's copies, as the sites' fireflies reported it
    (monitoring/network_accounting.py): flows, bytes, and the flows it shared with other copies (their
    bytes split by size, an estimate)."""
    totals = rule.traffic.aggregate(flows=Sum("flows"), bytes=Sum("bytes"), shared_flows=Sum("shared_flows"))
    return {key: int(value or 0) for key, value in totals.items()}
