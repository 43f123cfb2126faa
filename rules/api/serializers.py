"""REST representation of rules: what a request may say, and what a rule shows."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from ..choices import USER_ACTIVITY
from ..models import Rule, Subscription
from ..selection import FILTER_KEYS
from ..selectors import rule_network, rule_replicas, rule_state


class RuleRequestSerializer(serializers.Serializer):
    """A new rule: one product or metadata filters; an RSE expression or SRC names. The checks against
    what the platform knows and what the role allows are the service's (rules.services.create_rule)."""

    product = serializers.CharField(
        required=False, max_length=300, help_text="A product id or DID (scope:name)"
    )
    filters = serializers.DictField(
        child=serializers.CharField(max_length=100),
        required=False,
        help_text=f"Metadata filters, any of: {', '.join(FILTER_KEYS)}",
    )
    rse_expression = serializers.CharField(required=False, max_length=500, trim_whitespace=True)
    srcs = serializers.ListField(
        child=serializers.CharField(max_length=64), required=False, max_length=50, help_text="SRC names"
    )
    copies = serializers.IntegerField(default=1)
    activity = serializers.CharField(default=USER_ACTIVITY, max_length=64)
    priority = serializers.IntegerField(default=3)
    lifetime = serializers.IntegerField(required=False, help_text="Seconds from now")
    expires_at = serializers.DateTimeField(required=False)
    comment = serializers.CharField(required=False, allow_blank=True, max_length=200)


class RuleCopySerializer(serializers.Serializer):
    product = serializers.CharField(source="product.did")
    endpoint = serializers.CharField(source="endpoint.name")
    site = serializers.CharField(source="endpoint.site.name")
    state = serializers.CharField()
    upstream = serializers.CharField(source="upstream.endpoint.name", allow_null=True, default=None)
    reason = serializers.CharField()


class RuleSerializer(serializers.ModelSerializer):
    owner = serializers.CharField(source="owner.username", read_only=True)
    products = serializers.SerializerMethodField()
    state = serializers.SerializerMethodField()
    copies_made = serializers.SerializerMethodField()
    network = serializers.SerializerMethodField(
        help_text="What the network carried for its copies, from the sites' fireflies: flows, bytes, "
        "shared_flows (flows shared with other copies, their bytes split by size)"
    )

    class Meta:
        model = Rule
        fields = [
            "id",
            "owner",
            "selection",
            "products",
            "rse_expression",
            "destinations",
            "copies",
            "activity",
            "priority",
            "expires_at",
            "comment",
            "state",
            "copies_made",
            "network",
            "rucio_account",
            "rucio_rules",
            "created",
        ]
        read_only_fields = fields

    def _copies(self, rule: Rule) -> list[Any]:
        # state and copies_made read the same rows: one query per rule, not two
        cache: dict[int, list[Any]] = self.__dict__.setdefault("_copies_cache", {})
        if rule.pk not in cache:
            cache[rule.pk] = rule_replicas(rule)
        return list(cache[rule.pk])

    def get_products(self, rule: Rule) -> list[str]:
        return [p.did for p in rule.products.all()]

    def get_state(self, rule: Rule) -> str:
        return str(rule_state(rule, self._copies(rule)))

    def get_network(self, rule: Rule) -> dict[str, int]:
        return rule_network(rule)

    def get_copies_made(self, rule: Rule) -> list[dict[str, Any]]:
        """Each copy, with its predicted arrival while it is still to come (``schedulers/arrivals.py``)."""
        from schedulers.arrivals import copy_arrivals

        copies = self._copies(rule)
        found = copy_arrivals(copies)
        rows = []
        for replica, row in zip(copies, RuleCopySerializer(copies, many=True).data, strict=True):
            arrival = found.get(replica.pk)
            row["predicted_arrival"] = arrival.at.isoformat() if arrival and arrival.at else None
            row["arrival_note"] = arrival.note if arrival else ""
            rows.append(row)
        return rows


class SubscriptionRequestSerializer(serializers.Serializer):
    """A new subscription: the filters a new product must match, and the rule each one gets."""

    name = serializers.CharField(required=False, allow_blank=True, max_length=100)
    filters = serializers.DictField(child=serializers.CharField(max_length=100))
    rse_expression = serializers.CharField(required=False, max_length=500, trim_whitespace=True)
    srcs = serializers.ListField(child=serializers.CharField(max_length=64), required=False, max_length=50)
    copies = serializers.IntegerField(default=1)
    activity = serializers.CharField(default=USER_ACTIVITY, max_length=64)
    priority = serializers.IntegerField(default=3)
    lifetime = serializers.IntegerField(required=False, help_text="Seconds each rule lives")


class SubscriptionSerializer(serializers.ModelSerializer):
    owner = serializers.CharField(source="owner.username", read_only=True)
    rules: serializers.PrimaryKeyRelatedField = serializers.PrimaryKeyRelatedField(many=True, read_only=True)

    class Meta:
        model = Subscription
        fields = [
            "id",
            "owner",
            "name",
            "filters",
            "rse_expression",
            "srcs",
            "copies",
            "activity",
            "priority",
            "lifetime",
            "is_active",
            "last_error",
            "rules",
            "rucio_account",
            "rucio_subscription",
            "created",
        ]
        read_only_fields = fields
