"""Failed sign-ins, kept for the length of the limits' window (``identity.limits``)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class SignInPlace(models.TextChoices):
    PORTAL = "portal", "the portal's login page"
    ADMIN = "admin", "the admin site's login page"
    API_TOKEN = "api-token", "the REST API's token endpoint"


class SignInFailure(models.Model):
    """One password that did not match (or an account that does not exist), from an address. The password
    itself is never kept."""

    at = models.DateTimeField(db_index=True)
    address = models.GenericIPAddressField()
    username = models.CharField(max_length=150)  # as typed, lower-cased
    place = models.CharField(max_length=16, choices=SignInPlace.choices)

    class Meta:
        indexes = [models.Index(fields=["address", "username", "at"]), models.Index(fields=["address", "at"])]
        ordering = ["-at"]

    def __str__(self) -> str:
        return f"{self.username} from {self.address} at {self.place}, {self.at:%Y-%m-%d %H:%M:%S}"


class TokenScope(models.TextChoices):
    """What a personal API token opens; each within what its owner's role allows (srcnet.roles)."""

    READ = "read", "read: everything the account may see, and no change"
    RULES = "rules", "rules: read, and make and remove the account's own rules and subscriptions"
    OPERATE = "operate", "operate: everything the account's role allows through the REST API"
    FTS3 = "fts3", "fts3: the FTS3 endpoint only (submit, follow and cancel transfer jobs)"


class ApiToken(models.Model):
    """A personal API token. Only a digest of its key is kept: the key is shown once, when it is made, and a
    stolen database opens nothing. It expires, is limited to one scope, and is revoked (kept, for the record)
    rather than deleted."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    scope = models.CharField(max_length=8, choices=TokenScope.choices)
    # SHA-256 of the key, hex: the keys are 256 random bits, so a slow password hash would add nothing but
    # cost on every request, and a digest can be looked up directly.
    digest = models.CharField(max_length=64, unique=True)
    # The key's first characters, to recognise it in a list (never enough to use it).
    prefix = models.CharField(max_length=16)
    created = models.DateTimeField(auto_now_add=True)
    expires = models.DateTimeField()
    last_used = models.DateTimeField(null=True, blank=True)
    last_used_from = models.GenericIPAddressField(null=True, blank=True)
    revoked = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created"]
        indexes = [models.Index(fields=["user", "revoked", "expires"])]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}..., {self.scope}) of {self.user}"


class MappedRole(models.TextChoices):
    SCIENTIST = "scientist", "scientist"
    OPERATOR = "operator", "operator"
    ADMIN = "admin", "admin"


class GroupMapping(models.Model):
    """What a group of the sign-on issuer (``wlcg.groups``, as SKA-IAM names them: ``/ska/operators``) gives
    its members here: a role, and optionally membership of a project. An admin edits these; an account
    signing on gets the broadest role and exactly the mapped projects its groups give, at every sign-on. An
    account none of whose groups is mapped is refused."""

    group = models.CharField(
        max_length=255, help_text="The group as the issuer names it, e.g. /ska/operators"
    )
    role = models.CharField(max_length=10, choices=MappedRole.choices, default=MappedRole.SCIENTIST)
    project = models.ForeignKey(
        "projects.Project",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="group_mappings",
        help_text="Members of the group are members of this project (and of no mapped project they leave)",
    )

    class Meta:
        ordering = ["group", "role"]
        constraints = [
            models.UniqueConstraint(fields=["group", "role", "project"], name="group_mapping_unique"),
            models.UniqueConstraint(
                fields=["group", "role"],
                condition=models.Q(project__isnull=True),
                name="group_mapping_unique_role",
            ),
        ]

    def __str__(self) -> str:
        project = f" and project {self.project}" if self.project_id else ""
        return f"{self.group} -> {self.role}{project}"
