"""Personal API tokens: made (the key shown once), found by the digest of a presented key, revoked.

A key is ``srcnet_`` and 43 characters of 256 random bits. The prefix lets a leaked key be recognised by
secret scanners and in a token list; only its SHA-256 is stored (``identity.models.ApiToken``)."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from .models import ApiToken, TokenScope

KEY_PREFIX = "srcnet_"
# A token's use is recorded at most this often: a busy client must not turn every read into a write.
LAST_USE_RESOLUTION = timedelta(seconds=60)


class TokenError(ValueError):
    """Input that cannot make a token: ``field`` names what to change."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Grant:
    """How a request was authenticated by a token: its scope, and where it came from ("personal" for the
    platform's API tokens, "issuer" for a token issuer's JWT)."""

    scope: str
    source: str
    token_id: int | None = None


def digest_of(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def default_days() -> int:
    return int(getattr(settings, "SRCNET_API_TOKEN_DEFAULT_DAYS", 30))


def max_days() -> int:
    return int(getattr(settings, "SRCNET_API_TOKEN_MAX_DAYS", 365))


def max_live_tokens() -> int:
    return int(getattr(settings, "SRCNET_API_TOKENS_PER_ACCOUNT", 50))


def _checked(name: Any, scope: Any, days: Any) -> tuple[str, str, int]:
    if not isinstance(name, str) or not name.strip() or len(name.strip()) > 100 or "\x00" in name:
        raise TokenError("name", "A token's name is 1 to 100 characters.")
    if scope not in TokenScope.values:
        raise TokenError("scope", f"The scope is one of {', '.join(TokenScope.values)}.")
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= max_days():
        raise TokenError("expires_in_days", f"A token lasts 1 to {max_days()} days.")
    return name.strip(), str(scope), days


def _audit(user: Any, action: str, token: ApiToken, target: str, details: dict[str, Any]) -> None:
    from operations.choices import TargetType
    from operations.services import record_event

    record_event(
        user=user,
        action=action,
        target_type=TargetType.TOKEN,
        target_id=token.pk,
        target=target,
        details=details,
    )


@transaction.atomic
def issue(
    user: Any, *, name: Any, scope: Any = TokenScope.OPERATE, days: Any = None, address: str | None = None
) -> tuple[ApiToken, str]:
    """A new token of ``user`` and its key (the only time the key exists outside the caller's hands), in the
    audit trail. At most ``SRCNET_API_TOKENS_PER_ACCOUNT`` live tokens per account, counted under a lock on
    the account."""
    name, scope, days = _checked(name, scope, default_days() if days is None else days)
    type(user).objects.select_for_update().filter(pk=user.pk).first()
    now = timezone.now()
    live = ApiToken.objects.filter(user=user, revoked__isnull=True, expires__gt=now).count()
    if live >= max_live_tokens():
        raise TokenError(
            "tokens",
            f"{user.get_username()} holds {live} live tokens, the most an account may: revoke one first.",
        )
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user,
        name=name,
        scope=scope,
        digest=digest_of(key),
        prefix=key[: len(KEY_PREFIX) + 4],
        expires=now + timedelta(days=days),
    )
    details = {"scope": scope, "expires": token.expires.isoformat(), "from": address}
    _audit(user, "issue_token", token, f"{name} ({token.prefix}...)", details)
    return token, key


def live_token(key: str) -> ApiToken | None:
    """The unrevoked, unexpired token of an active account whose key is ``key``, or None."""
    if not key.startswith(KEY_PREFIX):
        return None
    token = ApiToken.objects.select_related("user").filter(digest=digest_of(key)).first()
    if token is None or token.revoked is not None or token.expires <= timezone.now():
        return None
    if not token.user.is_active:
        return None
    return token


def why_refused(key: str) -> str:
    """The reason a key opens nothing, for the 401's message (never which account it was)."""
    token = ApiToken.objects.filter(digest=digest_of(key)).first() if key.startswith(KEY_PREFIX) else None
    if token is None:
        return "Unknown token"
    if token.revoked is not None:
        return "The token was revoked"
    if token.expires <= timezone.now():
        return "The token has expired"
    return "The token's account is disabled"


def record_use(token: ApiToken, address: str | None) -> None:
    """Note when (and from where) the token was last used, at most once per LAST_USE_RESOLUTION."""
    now = timezone.now()
    if token.last_used is not None and now - token.last_used < LAST_USE_RESOLUTION:
        return
    ApiToken.objects.filter(pk=token.pk).update(last_used=now, last_used_from=address or None)


@transaction.atomic
def revoke(token: ApiToken, by: Any) -> bool:
    """Revoke ``token`` (False if it already was), in the audit trail; the row stays, for the record."""
    done = ApiToken.objects.filter(pk=token.pk, revoked__isnull=True).update(
        revoked=timezone.now(), revoked_by=by if getattr(by, "pk", None) else None
    )
    if done:
        target = f"{token.name} ({token.prefix}...) of {token.user.get_username()}"
        _audit(by, "revoke_token", token, target, {"scope": token.scope})
    return bool(done)
