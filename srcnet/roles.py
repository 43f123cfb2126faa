"""The platform's four roles, in one place, so the API, the FTS3 endpoint and the portal agree.

- anonymous: nothing but the login page and the token endpoint;
- scientist (any authenticated account): reads, and asks for data through rules;
- operator (``is_staff``): changes the network's state: topology, policies, pushes, pauses, campaigns,
  transfer jobs;
- admin (``is_superuser``): users, tokens and the transfer service's configuration (link, storage and
  activity limits), as FTS3 keeps its ``/config`` endpoints to its "config" role.

A service account (Rucio's conveyor) may hold the ``transfers.submit_transfers`` permission: it submits and
manages its own FTS3 jobs without being an operator. A service account (the push scheduler, pointed at the
FTS3 endpoint) may hold ``transfers.configure_transfers``: it sets link, storage and activity limits through
the FTS3 ``/config`` endpoints without being an admin."""

from __future__ import annotations

from enum import IntEnum
from typing import Any

SUBMIT_TRANSFERS = "transfers.submit_transfers"
CONFIGURE_TRANSFERS = "transfers.configure_transfers"


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


def may_configure_transfers(user: Any) -> bool:
    """Admins, and service accounts granted the configure permission (the push scheduler): FTS3's "config"
    role, for its /config endpoints."""
    return is_admin(user) or (role_of(user) > Role.ANONYMOUS and user.has_perm(CONFIGURE_TRANSFERS))


def _grant(user: Any, permission: str) -> None:
    from django.contrib.auth.models import Permission

    app, codename = permission.split(".")
    user.user_permissions.add(Permission.objects.get(content_type__app_label=app, codename=codename))


def grant_submit_transfers(user: Any) -> None:
    """Let a service account (Rucio's conveyor) submit and manage its own transfer jobs."""
    _grant(user, SUBMIT_TRANSFERS)


def grant_configure_transfers(user: Any) -> None:
    """Let a service account (the push scheduler) set limits through the FTS3 /config endpoints."""
    _grant(user, CONFIGURE_TRANSFERS)
