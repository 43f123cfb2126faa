"""A newly registered product is offered to the subscriptions once its registration (files included) has
committed."""

from __future__ import annotations

from functools import partial
from typing import Any

from django.db import transaction
from django.db.models.signals import post_save
from django.dispatch import receiver

from replicas.models import DataProduct


@receiver(post_save, sender=DataProduct)
def offer_to_subscriptions(sender: Any, instance: DataProduct, created: bool, **kwargs: Any) -> None:
    if created:
        from .subscriptions import on_product_registered

        transaction.on_commit(partial(on_product_registered, instance.pk), robust=True)
