"""In Rucio mode, a project's members change in Rucio too: the Rucio accounts of the users who joined or
left get or lose that project's attribute (``rucio_access``) once the change is committed, so that Rucio's
server lets them ask for its proprietary products, or no longer does. A user without a Rucio account yet
gets it with the account, when the platform first makes one. A Rucio that cannot be reached leaves the
account as it was until the platform next touches it (``ensure_account``), and says so in the log."""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.db.models.signals import m2m_changed
from django.dispatch import receiver

from projects.models import Project

from .tasks import rucio_configured

log = logging.getLogger("srcnet.rucio")


@receiver(m2m_changed, sender=Project.members.through)
def _members_changed(sender: Any, instance: Any, action: str, reverse: bool, pk_set: Any, **_: Any) -> None:
    if not rucio_configured():
        return
    if action == "pre_clear" and not reverse:  # the members are gone by post_clear: remember who they were
        instance._srcnet_cleared = list(instance.members.all())
        return
    if action not in ("post_add", "post_remove", "post_clear"):
        return
    from django.contrib.auth import get_user_model

    if reverse:  # user.projects.add(...): the user is the instance
        users = [instance]
    elif action == "post_clear":
        users = list(getattr(instance, "_srcnet_cleared", []))
    else:
        users = list(get_user_model().objects.filter(pk__in=pk_set or ()))
    if users:
        transaction.on_commit(lambda: sync_accounts(users))


def sync_accounts(users: list[Any]) -> None:
    """Each user's Rucio account's project attributes, for the users that have an account."""
    from .rucio import RucioAdapter
    from .rucio_access import sync_project_attributes
    from .rucio_accounts import rucio_account_name

    try:
        adapter = RucioAdapter.from_env()
        for user in users:
            account = rucio_account_name(user)
            if not adapter.account_exists(account):
                continue  # it gets its projects with the account, when the platform first makes it
            sync_project_attributes(adapter.client, account, user)
    except Exception as exc:  # Rucio down, or it refused the platform's login
        log.error(
            "the Rucio accounts of %s keep their old projects until the platform next touches them: %s",
            ", ".join(sorted(u.get_username() for u in users)), exc,
        )  # fmt: skip
