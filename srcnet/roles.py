"""The platform's four roles, in one place, so the API, the FTS3 endpoint and the portal agree.

- anonymous: nothing but the login page and the token endpoint;
- scientist (any authenticated account): reads, and asks for data through rules;
- operator (``is_staff``): changes the network's state: topology, policies, pushes, pauses, campaigns,
  transfer jobs;
- admin (``is_superuser``): users, tokens and the transfer service's configuration (link, storage and
  activity limits), as FTS3 keeps its ``/config`` endpoints to its "config" role.

A service account (Rucio's conveyor) may hold the ``transfers.submit_transfers`` permission: it submits and
manages its own FTS3 jobs without being an operator."""

from __future__ import annotations

from enum import IntEnum
from typing import Any

SUBMIT_TRANSFERS = "transfers.submit_transfers"


class Role(IntEnum):
    ANONYMOUS = 0
    SCIENTIST = 1
    OPERATOR = 2
    ADMIN = 3


def role_of(user: Any) -> Role:
    if user is None or not getattr(user, "is_authenticated", False) or not user.is_active:
        return Role.ANONYMOUS
    if user.is_superuser:
        return Role.ADMIN
    if user.is_staff:
        return Role.OPERATOR
    return Role.SCIENTIST


def is_operator(user: Any) -> bool:
    return role_of(user) >= Role.OPERATOR


def is_admin(user: Any) -> bool:
    return role_of(user) >= Role.ADMIN


def may_submit_transfers(user: Any) -> bool:
    """Operators, and service accounts granted the submit permission (Rucio's conveyor)."""
    return is_operator(user) or (role_of(user) > Role.ANONYMOUS and user.has_perm(SUBMIT_TRANSFERS))


def grant_submit_transfers(user: Any) -> None:
    """Let a service account (Rucio's conveyor) submit and manage its own transfer jobs."""
    from django.contrib.auth.models import Permission

    app, codename = SUBMIT_TRANSFERS.split(".")
    user.user_permissions.add(Permission.objects.get(content_type__app_label=app, codename=codename))
