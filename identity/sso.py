"""Accounts of single sign-on: the issuer's subject is the account (``TokenIdentity``), its groups
(``wlcg.groups``) give its role and projects through the admin's mappings (``GroupMapping``), at every
sign-on, in the portal (authorization code) and at the REST API (a bearer token of the sign-on issuer)."""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from projects.models import Project
from transfers.models import TokenIdentity

from .models import GroupMapping, MappedRole

log = logging.getLogger("srcnet.sign_in")

ROLE_ORDER = [MappedRole.SCIENTIST, MappedRole.OPERATOR, MappedRole.ADMIN]
USERNAME_UNSAFE = re.compile(r"[^\w.@+-]")


class NoAccess(Exception):
    """The issuer vouches for the person, but none of their groups is mapped to anything here."""


@dataclass(frozen=True)
class SsoSettings:
    issuer: str
    client_id: str
    client_secret: str
    ca_file: str
    scopes: str
    groups_claim: str
    cli_client_id: str
    name: str = "single sign-on"

    @property
    def enabled(self) -> bool:
        return bool(self.issuer and self.client_id)

    @property
    def verify(self) -> str | bool:
        return self.ca_file or True


def sso_settings() -> SsoSettings:
    conf = getattr(settings, "SRCNET_SSO", {}) or {}
    return SsoSettings(
        issuer=str(conf.get("ISSUER") or "").rstrip("/"),
        client_id=str(conf.get("CLIENT_ID") or ""),
        client_secret=str(conf.get("CLIENT_SECRET") or ""),
        ca_file=str(conf.get("CA_FILE") or ""),
        scopes=str(conf.get("SCOPES") or "openid profile"),
        groups_claim=str(conf.get("GROUPS_CLAIM") or "wlcg.groups"),
        cli_client_id=str(conf.get("CLI_CLIENT_ID") or ""),
        name=str(conf.get("NAME") or "single sign-on"),
    )


def groups_of(claims: dict[str, Any], claim: str) -> list[str]:
    value = claims.get(claim) or []
    if isinstance(value, str):
        value = value.split()
    return sorted({str(g) for g in value if isinstance(g, str | int)})


def _free_username(preferred: str, subject: str) -> str:
    users = get_user_model().objects
    base = USERNAME_UNSAFE.sub("", preferred)[:120] or "user"
    if not users.filter(username=base).exists():
        return base
    # A local account (the bootstrap admin's, or another person's) of that name is never taken over.
    return f"{base}-{hashlib.sha256(subject.encode()).hexdigest()[:8]}"


@transaction.atomic
def account_for(issuer: str, claims: dict[str, Any], groups: list[str]) -> Any:
    """The account of the issuer's subject, made at its first sign-on, its role and mapped projects set from
    ``groups``; NoAccess when no group is mapped (an existing account is then left as it was, and refused)."""
    subject = str(claims.get("sub") or "")
    if not subject:
        raise NoAccess("the issuer named no subject")
    registered = TokenIdentity.objects.select_related("user").filter(issuer=issuer, subject=subject).first()
    if registered is not None and not registered.sign_on:
        # An identity an admin registered (a service account's): its account is as the admin set it.
        if not registered.user.is_active:
            raise NoAccess(f"the account {registered.user.username} is disabled")
        return registered.user
    mappings = list(GroupMapping.objects.filter(group__in=groups))
    if not mappings:
        raise NoAccess(f"none of the groups {', '.join(groups) or '(none)'} gives access to this platform")
    identity = registered
    if identity is None:
        preferred = str(claims.get("preferred_username") or claims.get("email") or subject)
        user = get_user_model().objects.create_user(_free_username(preferred, subject))
        user.set_unusable_password()  # signs on through the issuer only
        TokenIdentity.objects.create(issuer=issuer, subject=subject, user=user, sign_on=True)
        log.info("account %s made for %s of %s", user.username, subject, issuer)
    else:
        user = identity.user
        if not user.is_active:
            raise NoAccess(f"the account {user.username} is disabled")
    role = max((MappedRole(m.role) for m in mappings), key=ROLE_ORDER.index)
    user.is_staff = role in (MappedRole.OPERATOR, MappedRole.ADMIN)
    user.is_superuser = role == MappedRole.ADMIN
    user.email = str(claims.get("email") or user.email)[:254]
    user.save()
    _set_projects(user, {m.project_id for m in mappings if m.project_id})
    return user


def _set_projects(user: Any, wanted: set[int]) -> None:
    """Membership of every mapped project is the groups' to say; projects no mapping names are left as an
    operator set them."""
    mapped = set(GroupMapping.objects.filter(project__isnull=False).values_list("project_id", flat=True))
    current = set(user.projects.filter(pk__in=mapped).values_list("pk", flat=True))
    for project in Project.objects.filter(pk__in=wanted - current):
        project.members.add(user)
    for project in Project.objects.filter(pk__in=current - wanted):
        project.members.remove(user)
