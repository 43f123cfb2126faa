"""A newly registered product is offered to the subscriptions once its registration (files included) has
committed; a user who changes has their Rucio account brought in step (Rucio mode)."""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models.signals import post_save
from django.dispatch import receiver

from replicas.models import DataProduct

log = logging.getLogger(__name__)


@receiver(post_save, sender=DataProduct)
def offer_to_subscriptions(sender: Any, instance: DataProduct, created: bool, **kwargs: Any) -> None:
    if created:
        from .subscriptions import on_product_registered

        transaction.on_commit(partial(on_product_registered, instance.pk), robust=True)


@receiver(post_save, sender=settings.AUTH_USER_MODEL)
def keep_rucio_account_in_step(sender: Any, instance: Any, created: bool, **kwargs: Any) -> None:
    """In Rucio mode a user who has a Rucio account (made for their rules) is brought in step when the user
    changes: deactivated, the account is suspended; active again, reactivated; a new e-mail, the account's."""
    from .models import Rule
    from .services import through_rucio

    if created or not through_rucio():
        return
    if set(kwargs.get("update_fields") or ()) == {"last_login"}:
        return  # a login changes nothing Rucio keeps
    if not Rule.objects.filter(owner_id=instance.pk).exclude(rucio_account="").exists():
        return
    transaction.on_commit(partial(_sync_rucio_account, instance.pk), robust=True)


def _sync_rucio_account(user_id: int) -> None:
    from django.contrib.auth import get_user_model

    from replicas.rucio import RucioAdapter, RucioAdapterError
    from replicas.rucio_accounts import ensure_account

    user = get_user_model().objects.get(pk=user_id)
    try:
        ensure_account(RucioAdapter.from_env(), user, [])
    except RucioAdapterError:
        log.exception("the Rucio account of %s could not be brought in step", user.get_username())
