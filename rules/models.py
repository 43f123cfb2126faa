"""A scientist's (or an operator's) request for copies of data products at SRC storage: a rule."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from .choices import USER_ACTIVITY


class Rule(models.Model):
    """``copies`` copies of each selected product on the storage ``rse_expression`` selects, until
    ``expires_at`` (never when empty). ``selection`` records what was asked for (one product, or the
    metadata filters); ``products`` what it resolved to when the rule was made (later products do not join:
    that is a subscription's job). In embedded mode ``replicas`` are the copies the push loop makes for
    it; in Rucio mode ``rucio_rules`` maps each product's DID to its Rucio rule (under ``rucio_account``)."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="rules")
    selection = models.JSONField(default=dict, help_text="What was asked for: a product, or metadata filters")
    products = models.ManyToManyField("replicas.DataProduct", related_name="rules")
    rse_expression = models.CharField(max_length=500, help_text="As given (or the named SRCs' storage)")
    destinations = models.JSONField(default=list, help_text="The storage endpoints it matched when made")
    copies = models.PositiveSmallIntegerField(default=1, validators=[MinValueValidator(1)])
    activity = models.CharField(max_length=64, default=USER_ACTIVITY)
    priority = models.PositiveSmallIntegerField(
        default=3, validators=[MinValueValidator(1), MaxValueValidator(5)]
    )
    expires_at = models.DateTimeField(null=True, blank=True)
    comment = models.CharField(max_length=200, blank=True)
    replicas = models.ManyToManyField("replicas.Replica", related_name="rules", blank=True)
    rucio_account = models.CharField(max_length=25, blank=True)
    rucio_rules = models.JSONField(default=dict, blank=True, help_text="Product DID -> Rucio rule id")
    subscription = models.ForeignKey(
        "rules.Subscription",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="rules",
        help_text="The standing request that made it for a newly registered product",
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return f"rule {self.pk} of {self.owner} to {self.rse_expression}"


class Subscription(models.Model):
    """A standing request: for every product registered from now on that matches ``filters`` and that its
    owner may see, a rule with these parameters (``rules.subscriptions``). ``lifetime`` (seconds) counts
    from each rule's making; empty: the role's longest. In Rucio mode it is a Rucio subscription under the
    owner's account (``rucio_subscription``), evaluated by Rucio's transmogrifier."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="subscriptions"
    )
    name = models.CharField(max_length=100, blank=True)
    filters = models.JSONField(default=dict, help_text="The metadata filters a new product must match")
    rse_expression = models.CharField(max_length=500, blank=True)
    srcs = models.JSONField(default=list, blank=True)
    copies = models.PositiveSmallIntegerField(default=1, validators=[MinValueValidator(1)])
    activity = models.CharField(max_length=64, default=USER_ACTIVITY)
    priority = models.PositiveSmallIntegerField(
        default=3, validators=[MinValueValidator(1), MaxValueValidator(5)]
    )
    lifetime = models.PositiveIntegerField(null=True, blank=True, help_text="Seconds each rule lives")
    is_active = models.BooleanField(default=True)
    last_error = models.TextField(blank=True, help_text="Why the last matching product got no rule")
    rucio_account = models.CharField(max_length=25, blank=True)
    rucio_subscription = models.CharField(
        max_length=64, blank=True, help_text="Rucio mode: the id of the Rucio subscription that stands for it"
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return f"subscription {self.pk} of {self.owner}"
