"""Least-privilege WLCG tokens for each copy (docs/tokens.md).

For every copy the transfer service asks its issuer for two tokens: the source's ``storage.read`` on the
file's directory and the destination's ``storage.create``, ``storage.modify`` and ``storage.read`` on its
directory (read: the copy stats and checksums what it wrote; modify: it replaces a failed attempt's leftover),
each with that site's audience. Paths are the WLCG profile's: below the endpoint's prefix (the site's base
path). A token is refreshed with its refresh token when less than a quarter of its life is left, so a copy
lasting hours keeps valid credentials for its looks at the destination and its checksums.

A token's value is never logged, stored or shown: ``Token`` prints as its scope and audience only.
"""

from __future__ import annotations

import logging
import posixpath
import re
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Protocol
from urllib.parse import unquote, urlsplit

import requests

from .storage_urls import with_opaque

log = logging.getLogger(__name__)

# Refresh when less than this share of the token's life is left (and never later than MIN_MARGIN_SECONDS
# before it ends): a token checked by a site in the middle of a look must still be valid when it arrives.
REFRESH_AT_FRACTION = 0.25
MIN_MARGIN_SECONDS = 10.0
AUDIENCE_SCOPE_PREFIX = "aud:"
# The scope a token must grant to be a credential at an FTS3 endpoint (Rucio asks its issuer for exactly
# this one when it authenticates to FTS3 with a token; transfers/fts3/auth.py checks it).
FTS_SCOPE = "fts"


_TOKEN_IN_TEXT = re.compile(r"(authz=Bearer(?:%20|\s|\+))[^&\s'\"]+|(Bearer\s+)[A-Za-z0-9._~+/=-]{16,}")


def redact(text: str) -> str:
    """``text`` with every bearer token in it (a root:// URL's ``authz``, an ``Authorization`` value)
    replaced: error messages and logs may quote the URLs a copy used."""
    return _TOKEN_IN_TEXT.sub(lambda m: (m.group(1) or m.group(2)) + "(token)", text)


def url_with_token(url: str, token: str) -> str:
    """``url`` (root://) carrying ``token`` in its opaque part, as XRootD's token plugin reads it."""
    if not token:
        return url
    return with_opaque(url, f"authz=Bearer%20{token}")


class RedactTokens(logging.Filter):
    """A logging filter that redacts tokens from what gfal2 and XrdCl log (they quote URLs)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


class TokenError(RuntimeError):
    """The issuer refused or could not be reached; the message says which and why (never the token)."""


class IssuerRefused(TokenError):
    """The issuer answered and refused the grant; ``error`` is its OAuth2 error code (``invalid_scope``)."""

    def __init__(self, message: str, error: str = "") -> None:
        super().__init__(message)
        self.error = error


@dataclass(frozen=True)
class IssuerSettings:
    """Where the transfer service gets its tokens (settings.SRCNET_TOKENS)."""

    url: str
    client_id: str
    client_secret: str = field(repr=False)
    ca_file: str = ""
    # "scope": the audience is asked for as the optional scope aud:<audience> (Keycloak); "parameter": as
    # the form field audience=<audience> (INDIGO IAM, SKA-IAM).
    audience_style: str = "scope"
    timeout: float = 30.0

    @property
    def token_endpoint(self) -> str:
        return f"{self.url.rstrip('/')}/protocol/openid-connect/token"

    @property
    def verify(self) -> str | bool:
        return self.ca_file or True

    def as_setting(self) -> dict[str, str]:
        """These settings as settings.SRCNET_TOKENS holds them (the inverse of settings_from_django)."""
        return {
            "ISSUER": self.url,
            "CLIENT_ID": self.client_id,
            "CLIENT_SECRET": self.client_secret,
            "CA_FILE": self.ca_file,
            "AUDIENCE_STYLE": self.audience_style,
        }


@dataclass
class Token:
    """One access token and how to renew it."""

    value: str = field(repr=False)
    scope: str
    audience: str
    expires_at: float  # time.time()
    lifetime: float
    refresh_token: str = field(default="", repr=False)

    def seconds_left(self, now: float | None = None) -> float:
        return self.expires_at - (time.time() if now is None else now)

    def due(self, now: float | None = None) -> bool:
        margin = max(MIN_MARGIN_SECONDS, self.lifetime * REFRESH_AT_FRACTION)
        return self.seconds_left(now) <= margin


MAX_KEPT_TOKENS = 10_000
_CLIENTS: dict[IssuerSettings, TokenClient] = {}


def client_for(issuer: IssuerSettings) -> TokenClient:
    """The process's one client of ``issuer`` (so its kept tokens serve every copy the process makes)."""
    client = _CLIENTS.get(issuer)
    if client is None:
        client = _CLIENTS.setdefault(issuer, TokenClient(issuer))
    return client


def settings_from_django() -> IssuerSettings | None:
    """The issuer the settings name, or None when none is configured (copies then carry no token)."""
    from django.conf import settings

    conf = getattr(settings, "SRCNET_TOKENS", {}) or {}
    if not conf.get("ISSUER"):
        return None
    return IssuerSettings(
        url=str(conf["ISSUER"]),
        client_id=str(conf["CLIENT_ID"]),
        client_secret=str(conf["CLIENT_SECRET"]),
        ca_file=str(conf.get("CA_FILE", "")),
        audience_style=str(conf.get("AUDIENCE_STYLE", "scope")),
    )


class TokenClient:
    """The transfer service's client of one issuer (client credentials and refresh grants). Tokens it got
    are kept and handed out again while they have more than the refresh margin left: the files of one
    directory at one site need the same scopes, and a worker copying many of them asks the issuer once."""

    def __init__(self, issuer: IssuerSettings) -> None:
        self.issuer = issuer
        self._kept: dict[tuple[tuple[str, ...], str], Token] = {}
        self._lock = threading.Lock()
        self.grants = 0  # tokens asked of the issuer (not from the kept ones)

    def _grant(self, form: dict[str, str], what: str) -> dict[str, object]:
        form = {**form, "client_id": self.issuer.client_id, "client_secret": self.issuer.client_secret}
        try:
            answer = requests.post(
                self.issuer.token_endpoint, data=form, verify=self.issuer.verify, timeout=self.issuer.timeout
            )
        except requests.RequestException as exc:
            raise TokenError(f"the token issuer {self.issuer.url} did not answer ({what}): {exc}") from exc
        if not answer.ok:
            error = ""
            try:
                body = answer.json()
                error = str(body.get("error", ""))
                reason = f"{error}: {body.get('error_description', '')}".strip(": ")
            except ValueError:
                reason = answer.text[:200]
            raise IssuerRefused(
                f"the token issuer {self.issuer.url} refused {what} (HTTP {answer.status_code}: {reason})",
                error,
            )
        return dict(answer.json())

    def fetch(self, scopes: list[str], audience: str) -> Token:
        """A token with ``scopes`` for ``audience``: a kept one while it has life enough, else a new one
        (client credentials)."""
        key = (tuple(sorted(scopes)), audience)
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None and not kept.due():
                return replace(kept)
        token = self.fetch_new(scopes, audience)
        with self._lock:
            if len(self._kept) >= MAX_KEPT_TOKENS:
                self._kept = {k: t for k, t in self._kept.items() if not t.due()}
            self._kept[key] = token
        return replace(token)

    def _asking(self, scopes: list[str], audience: str) -> dict[str, str]:
        """The form fields that ask for ``scopes`` at ``audience``, in the issuer's audience style."""
        asked, form = list(scopes), {}
        if audience and self.issuer.audience_style == "parameter":
            form["audience"] = audience
        elif audience:
            asked.append(f"{AUDIENCE_SCOPE_PREFIX}{audience}")
        form["scope"] = " ".join(asked)
        return form

    def fetch_new(self, scopes: list[str], audience: str) -> Token:
        """A new token with ``scopes`` for ``audience`` from the issuer (client credentials)."""
        form = {"grant_type": "client_credentials", **self._asking(scopes, audience)}
        body = self._grant(form, f"a token for {' '.join(scopes)} at {audience}")
        self.grants += 1
        return self._token(body, " ".join(scopes), audience)

    def exchange(self, subject: str, scopes: list[str], audience: str, *, refreshable: bool = True) -> Token:
        """RFC 8693: the token ``subject`` (someone else's) exchanged for one of this client with ``scopes``
        at ``audience`` and, when ``refreshable``, a refresh token, which this client can renew for as long
        as the copy needs (without one, ``refresh`` renews it with this client's own grant)."""
        wanted = "refresh_token" if refreshable else "access_token"
        form = {
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
            "subject_token": subject,
            "subject_token_type": "urn:ietf:params:oauth:token-type:access_token",
            "requested_token_type": f"urn:ietf:params:oauth:token-type:{wanted}",
            **self._asking(scopes, audience),
        }
        body = self._grant(form, f"to exchange a submitted token for {' '.join(scopes)} at {audience}")
        self.grants += 1
        return self._token(body, " ".join(scopes), audience)

    def refresh(self, token: Token) -> Token:
        """The same grant renewed (refresh grant); a new client credentials grant if it came without one."""
        if not token.refresh_token:
            return self.fetch(token.scope.split(), token.audience)
        body = self._grant(
            {"grant_type": "refresh_token", "refresh_token": token.refresh_token},
            f"to refresh the token for {token.scope} at {token.audience}",
        )
        renewed = self._token(body, token.scope, token.audience)
        if not renewed.refresh_token:
            renewed.refresh_token = token.refresh_token
        return renewed

    @staticmethod
    def _token(body: dict[str, object], scope: str, audience: str) -> Token:
        lifetime = float(str(body.get("expires_in", 0)) or 0)
        if not body.get("access_token") or lifetime <= 0:
            raise TokenError("the token issuer answered without an access token and its lifetime")
        return Token(
            value=str(body["access_token"]),
            scope=str(body.get("scope") or scope),
            audience=audience,
            expires_at=time.time() + lifetime,
            lifetime=lifetime,
            refresh_token=str(body.get("refresh_token") or ""),
        )


class RenewingToken:
    """A token that renews itself when read close to its end (thread-safe: the stall watch reads it from
    its own thread while the copy runs)."""

    def __init__(self, client: TokenClient, token: Token) -> None:
        self._client = client
        self._token = token
        self._lock = threading.Lock()
        self.renewals = 0

    @property
    def scope(self) -> str:
        return self._token.scope

    @property
    def audience(self) -> str:
        return self._token.audience

    def current(self) -> str:
        with self._lock:
            if self._token.due():
                self._token = self._client.refresh(self._token)
                self.renewals += 1
                log.info(
                    "renewed the token for %s at %s (renewal %d)", self.scope, self.audience, self.renewals
                )
            return self._token.value


class BearerToken(Protocol):
    """What a copy reads of a token: its current value (renewed or refused when at its end), its scope and
    audience (RenewingToken; submitted_tokens.PassedThrough)."""

    @property
    def scope(self) -> str: ...

    @property
    def audience(self) -> str: ...

    def current(self) -> str: ...


@dataclass(frozen=True)
class CopyTokens:
    """The source's and the destination's tokens of one copy."""

    source: BearerToken
    destination: BearerToken


def scope_path(url: str, prefix: str) -> str:
    """The directory of ``url``'s file below the endpoint's ``prefix`` (the site's base path), as a WLCG
    scope path: ``/`` and then the directories, without a trailing slash."""
    path = "/" + unquote(urlsplit(url).path).lstrip("/")
    below = path[len(prefix.rstrip("/")) :] if path.startswith(prefix.rstrip("/") + "/") else path
    directory = posixpath.dirname(below) or "/"
    return directory if directory == "/" else directory.rstrip("/")


def source_scopes(url: str, prefix: str) -> list[str]:
    return [f"storage.read:{scope_path(url, prefix)}"]


def destination_scopes(url: str, prefix: str) -> list[str]:
    path = scope_path(url, prefix)
    return [f"storage.create:{path}", f"storage.modify:{path}", f"storage.read:{path}"]


def service_client() -> TokenClient | None:
    """The process's client of the issuer the settings name, or None when none is configured."""
    issuer = settings_from_django()
    return None if issuer is None else client_for(issuer)


def tokens_for_copy(source: str, destination: str, client: TokenClient | None = None) -> CopyTokens | None:
    """Both tokens of the copy ``source`` -> ``destination`` (registered endpoints: the caller resolved
    them), or None when no issuer is configured."""
    from topology.services.storage_urls import StorageRegistry

    client = client or service_client()
    if client is None:
        return None
    registry = StorageRegistry.load()
    src, dst = registry.resolve(source), registry.resolve(destination)
    return CopyTokens(
        source=RenewingToken(client, client.fetch(source_scopes(source, src.prefix), src.audience)),
        destination=RenewingToken(
            client, client.fetch(destination_scopes(destination, dst.prefix), dst.audience)
        ),
    )


def removal_token(url: str, client: TokenClient | None = None) -> RenewingToken | None:
    """A ``storage.modify`` token for the directory of ``url``'s file (to delete it), or None when no issuer
    is configured. Over HTTP also ``storage.read`` there: gfal2 looks at a file (PROPFIND) before it deletes
    it over WebDAV, and XRootD refuses that look without read (its log: "ofs_stat: Unable to locate ...;
    permission denied"); XRootD's own protocol deletes without one."""
    from topology.services.storage_urls import StorageRegistry
    from topology.tpc_streams import ROOT_SCHEMES

    client = client or service_client()
    if client is None:
        return None
    endpoint = StorageRegistry.load().resolve(url)
    folder = scope_path(url, endpoint.prefix)
    scopes = [f"storage.modify:{folder}"]
    if url.partition("://")[0] not in ROOT_SCHEMES:
        scopes.append(f"storage.read:{folder}")
    return RenewingToken(client, client.fetch(scopes, endpoint.audience))
