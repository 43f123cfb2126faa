"""The storage tokens a submitter hands over with its files: FTS3's per-file ``source_tokens`` and
``destination_tokens``, as Rucio's FTS3 transfertool sends them for RSEs with ``oidc_support``.

Each token is checked when the job is submitted (signed by a trusted issuer, not expired, its audience the
storage endpoint's, its scopes covering the file's directory), so a job that could never copy is refused
with the field named (HTTP 400) instead of failing later. The service keeps them sealed (Fernet, a key
derived from the Django secret key): the database, the API and the logs never hold one in clear; its
``token_id`` (a SHA-256 prefix, as FTS shows) tells them apart.

FTS 3.14's two kinds: *managed* tokens (the default) are exchanged at submission (RFC 8693) for tokens of
the service's own client that come with a refresh token, and refreshed while a copy runs; *unmanaged*
ones (``params.unmanaged_tokens: true``) are used as given, and a copy that outlives one fails with that
reason."""

from __future__ import annotations

import base64
import hashlib
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import jwt
import requests
from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from .tokens import (
    BearerToken,
    CopyTokens,
    IssuerRefused,
    RenewingToken,
    Token,
    TokenClient,
    TokenError,
    scope_path,
    service_client,
    tokens_for_copy,
)

# Seconds of clock difference tolerated against the submitter's issuer (exp, nbf, iat).
LEEWAY_SECONDS = 30
JWKS_CACHE_SECONDS = 300
SIGNING_ALGORITHMS = ["RS256", "RS384", "RS512", "ES256", "ES384", "PS256"]
STORAGE_KINDS = ("storage.read", "storage.create", "storage.modify", "storage.stage")


class TokenRefused(ValueError):
    """A submitted token the service cannot use; the message says why (never the token)."""


@dataclass(frozen=True)
class CheckedToken:
    """A submitted token that passed the checks, with what the service keeps of it."""

    value: str = field(repr=False)
    token_id: str
    issuer: str
    scope: str
    audience: str
    expires_at: float


def token_id(value: str) -> str:
    """The token's name in the database, the API and the logs (the token itself never is)."""
    return hashlib.sha256(value.encode()).hexdigest()[:32]


def _fernet() -> Fernet:
    from django.conf import settings

    key = HKDF(
        algorithm=hashes.SHA256(), length=32, salt=None, info=b"srcnet submitted storage tokens"
    ).derive(str(settings.SECRET_KEY).encode())
    return Fernet(base64.urlsafe_b64encode(key))


def seal(value: str) -> str:
    return _fernet().encrypt(value.encode()).decode()


def unseal(sealed: str) -> str:
    try:
        return _fernet().decrypt(sealed.encode()).decode()
    except InvalidToken as exc:
        # The secret key changed since the job was submitted: its tokens cannot be read back.
        raise TokenError("a submitted token cannot be unsealed (the service's secret key changed)") from exc


def trusted_issuers() -> list[str]:
    """The issuers whose tokens submissions may carry: the service's own and SRCNET_TOKENS TRUSTED_ISSUERS."""
    from django.conf import settings

    conf = getattr(settings, "SRCNET_TOKENS", {}) or {}
    issuers = [str(conf.get("ISSUER") or "")] + [str(i) for i in conf.get("TRUSTED_ISSUERS", [])]
    return [i.rstrip("/") for i in issuers if i]


class IssuerKeys:
    """The signing keys of the trusted issuers, from their discovery documents (kept for a few minutes; a
    key id not among them makes one fresh look, for an issuer that has just rotated its keys)."""

    def __init__(self, ca_file: str = "") -> None:
        self.verify: str | bool = ca_file or True
        self._keys: dict[str, tuple[float, dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def key(self, issuer: str, kid: str) -> Any:
        with self._lock:
            cached = self._keys.get(issuer)
        keys = cached[1] if cached and time.monotonic() - cached[0] < JWKS_CACHE_SECONDS else None
        if keys is None or kid not in keys:
            keys = self._load(issuer)
        if kid not in keys:
            raise TokenRefused(f"its key id {kid!r} is not among the keys {issuer} publishes")
        return keys[kid]

    def _load(self, issuer: str) -> dict[str, Any]:
        try:
            discovery = requests.get(
                f"{issuer}/.well-known/openid-configuration", verify=self.verify, timeout=30
            )
            discovery.raise_for_status()
            answer = requests.get(discovery.json()["jwks_uri"], verify=self.verify, timeout=30)
            answer.raise_for_status()
            keys = {k.key_id: k.key for k in jwt.PyJWKSet.from_dict(answer.json()).keys if k.key_id}
        except (requests.RequestException, ValueError, KeyError, jwt.PyJWTError) as exc:
            raise TokenRefused(f"the keys of its issuer {issuer} could not be read: {exc}") from exc
        with self._lock:
            self._keys[issuer] = (time.monotonic(), keys)
        return keys


_KEYS: dict[str, IssuerKeys] = {}


def issuer_keys() -> IssuerKeys:
    from django.conf import settings

    ca_file = str((getattr(settings, "SRCNET_TOKENS", {}) or {}).get("CA_FILE") or "")
    return _KEYS.setdefault(ca_file, IssuerKeys(ca_file))


def _covers(granted: str, path: str) -> bool:
    granted = granted.rstrip("/") or "/"
    return granted == "/" or path == granted or path.startswith(granted + "/")


class TokenChecker:
    """Checks the tokens of one submission: each distinct token's signature once, then for each file
    whether it opens that file's directory at that endpoint."""

    def __init__(self, keys: IssuerKeys | None = None) -> None:
        from topology.services.storage_urls import StorageRegistry

        self._keys = keys or issuer_keys()
        self._registry = StorageRegistry.load()
        self._verified: dict[str, dict[str, Any]] = {}

    def check(self, value: object, *, url: str, role: str, managed: bool = True) -> CheckedToken:
        """``value`` as the ``role`` ("source" or "destination") token of a copy of ``url`` (on a registered
        endpoint), or TokenRefused saying what is wrong with it.

        Its audience must name the endpoint: the audience its storage accepts, or, for a ``managed`` token
        (which the service exchanges for one with the storage's audience), its host name, which is how
        Rucio and FTS name a storage's audience when they ask for a token. An unmanaged token reaches the
        storage as it is: only the storage's own audience will do."""
        if not isinstance(value, str) or value.count(".") != 2:
            raise TokenRefused("a token is a JWT (three base64url parts separated by dots)")
        name = token_id(value)
        claims = self._verified.get(name)
        if claims is None:
            claims = verify_jwt(value, self._keys)
            self._verified[name] = claims
        endpoint = self._registry.resolve(url)
        audiences = claims.get("aud") or []
        audiences = [audiences] if isinstance(audiences, str) else [str(a) for a in audiences]
        if endpoint.audience not in audiences:
            shown = ", ".join(audiences) or "(none)"
            if not managed:
                raise TokenRefused(
                    f"its audience {shown} is not {endpoint.name}'s ({endpoint.audience}); an unmanaged"
                    " token reaches the storage as it is"
                )
            if not endpoint.hostname or endpoint.hostname not in audiences:
                raise TokenRefused(
                    f"its audience {shown} names neither {endpoint.name}'s audience ({endpoint.audience})"
                    f" nor its host ({endpoint.hostname})"
                )
        path = scope_path(url, endpoint.prefix)
        # The storage rights only: what else a submitter's token carries (offline_access, fts) is not the
        # copy's to use, and its exchange asks for exactly these.
        granted = [g for g in str(claims.get("scope", "")).split() if g.partition(":")[0] in STORAGE_KINDS]
        wanted = ["storage.read"] if role == "source" else ["storage.create", "storage.modify"]
        if not any(
            kind in wanted and _covers(scoped, path)
            for kind, _, scoped in (g.partition(":") for g in granted)
        ):
            raise TokenRefused(f"it grants no {' or '.join(wanted)} on {path} at {endpoint.name}")
        return CheckedToken(
            value=value,
            token_id=name,
            issuer=str(claims["iss"]).rstrip("/"),
            scope=" ".join(granted),
            audience=endpoint.audience,
            expires_at=float(claims["exp"]),
        )


def verify_jwt(value: str, keys: IssuerKeys | None = None) -> dict[str, Any]:
    """The claims of ``value``, a JWT signed by a trusted issuer and within its lifetime, or TokenRefused
    saying what is wrong with it (its audience and scopes are for the caller to judge)."""
    try:
        header = jwt.get_unverified_header(value)
        unverified = jwt.decode(value, options={"verify_signature": False})
    except jwt.PyJWTError as exc:
        raise TokenRefused(f"not a readable JWT: {exc}") from exc
    algorithm = str(header.get("alg", ""))
    if algorithm not in SIGNING_ALGORITHMS:
        raise TokenRefused(f"its algorithm {algorithm!r} is not one of {', '.join(SIGNING_ALGORITHMS)}")
    issuer = str(unverified.get("iss", "")).rstrip("/")
    trusted = trusted_issuers()
    if issuer not in trusted:
        raise TokenRefused(f"its issuer {issuer!r} is not trusted (trusted: {', '.join(trusted) or 'none'})")
    key = (keys or issuer_keys()).key(issuer, str(header.get("kid", "")))
    try:
        return dict(
            jwt.decode(
                value,
                key,
                algorithms=[algorithm],
                leeway=LEEWAY_SECONDS,
                options={"verify_aud": False, "require": ["exp", "iss"]},
            )
        )
    except jwt.ExpiredSignatureError as exc:
        raise TokenRefused(f"it expired at {unverified.get('exp')} (now {int(time.time())})") from exc
    except jwt.ImmatureSignatureError as exc:
        raise TokenRefused(f"it is not valid before {unverified.get('nbf')}") from exc
    except jwt.InvalidSignatureError as exc:
        raise TokenRefused(f"its signature does not verify with {issuer}'s key") from exc
    except jwt.PyJWTError as exc:
        raise TokenRefused(str(exc)) from exc


@dataclass(frozen=True)
class PreparedToken:
    """What the service stores of a checked token: the token it will use (its own, exchanged, when
    managed) and how long that lives."""

    checked: CheckedToken
    managed: bool
    value: str = field(repr=False)
    refresh: str = field(repr=False)
    expires_at: float
    lifetime: float


def prepare_tokens(files: Sequence[Any], *, managed: bool) -> dict[tuple[int, str], PreparedToken]:
    """The submitted tokens of ``files`` (FileRequest rows), checked and, when ``managed``, exchanged, by
    (row position, role). ValidationError naming the file and field of the first one refused; TokenError
    if the issuer does not answer the exchange."""
    from django.core.exceptions import ValidationError

    prepared: dict[tuple[int, str], PreparedToken] = {}
    if not any(f.source_token is not None or f.destination_token is not None for f in files):
        return prepared
    checker = TokenChecker()
    client = required_client() if managed else None
    by_id: dict[str, PreparedToken] = {}
    for position, request in enumerate(files):
        index = position if request.file_index is None else request.file_index
        for role, raw, url in (
            ("source", request.source_token, request.source),
            ("destination", request.destination_token, request.destination),
        ):
            if raw is None:
                continue
            try:
                checked = checker.check(raw, url=url, role=role, managed=managed)
            except TokenRefused as exc:
                raise ValidationError(
                    {f"files[{index}].{role}_tokens": f"the token for {url}: {exc}"}
                ) from exc
            ready = by_id.get(checked.token_id)
            if ready is None:
                if client is not None:
                    own = exchanged(client, checked)
                    ready = PreparedToken(
                        checked, True, own.value, own.refresh_token, own.expires_at, own.lifetime
                    )
                else:
                    left = max(1.0, checked.expires_at - time.time())
                    ready = PreparedToken(checked, False, checked.value, "", checked.expires_at, left)
                by_id[checked.token_id] = ready
            prepared[(position, role)] = ready
    return prepared


def exchanged(client: TokenClient, checked: CheckedToken) -> Token:
    """RFC 8693: ``checked`` exchanged for a token of the service's own client with the same storage rights
    at the storage's own audience, renewable.

    A refresh token comes with it when the issuer gives one. Keycloak gives one only for a subject token
    with a session of its own; a client credentials token (Rucio's) has none, and the issuer answers
    ``invalid_request``: the exchange is then for the access token alone, which the service renews with its
    own client's grant for the same rights and audience (``TokenClient.refresh``)."""
    scopes = checked.scope.split()
    try:
        return client.exchange(checked.value, scopes, checked.audience)
    except IssuerRefused as refused:
        if refused.error != "invalid_request":
            raise
        return client.exchange(checked.value, scopes, checked.audience, refreshable=False)


def store_tokens(job: Any, rows: Sequence[Any], prepared: dict[tuple[int, str], PreparedToken]) -> None:
    """Keep each distinct prepared token of ``job`` once, sealed, and point the unsaved TransferFile ``rows``
    (in the files' order) at theirs."""
    from datetime import UTC, datetime

    from .models import SubmittedToken

    distinct = {ready.checked.token_id: ready for ready in prepared.values()}
    kept = SubmittedToken.objects.bulk_create(
        [
            SubmittedToken(
                job=job,
                token_id=name,
                managed=ready.managed,
                sealed_value=seal(ready.value),
                sealed_refresh=seal(ready.refresh) if ready.refresh else "",
                scope=ready.checked.scope,
                audience=ready.checked.audience,
                expires_at=datetime.fromtimestamp(ready.expires_at, UTC),
                lifetime_seconds=max(1, round(ready.lifetime)),
            )
            for name, ready in distinct.items()
        ]
    )
    by_id = {row.token_id: row for row in kept}
    for (position, role), ready in prepared.items():
        setattr(rows[position], f"{role}_token", by_id[ready.checked.token_id])


def required_client() -> TokenClient:
    """The service's own client, which managed tokens are exchanged with and renewed by."""
    client = service_client()
    if client is None:
        raise TokenError("managed tokens need the service's own issuer client (SRCNET_TOKENS ISSUER)")
    return client


class PassedThrough:
    """An unmanaged token: used as given; read after its end, it fails the copy with that reason."""

    def __init__(self, value: str, expires_at: float, scope: str, audience: str) -> None:
        self._value, self.expires_at = value, expires_at
        self.scope, self.audience = scope, audience

    def current(self) -> str:
        if time.time() >= self.expires_at:
            raise TokenError(
                f"the submitted unmanaged token for {self.audience} expired at {int(self.expires_at)};"
                " the service does not renew unmanaged tokens (params.unmanaged_tokens)"
            )
        return self._value


def renewing(stored: Any) -> RenewingToken | PassedThrough:
    """A stored SubmittedToken row as the copy reads it."""
    value = unseal(stored.sealed_value)
    if not stored.managed:
        return PassedThrough(value, stored.expires_at.timestamp(), stored.scope, stored.audience)
    token = Token(
        value=value,
        scope=stored.scope,
        audience=stored.audience,
        expires_at=stored.expires_at.timestamp(),
        lifetime=float(stored.lifetime_seconds),
        refresh_token=unseal(stored.sealed_refresh) if stored.sealed_refresh else "",
    )
    return RenewingToken(required_client(), token)


def tokens_for_file(row: Any, source: str, destination: str) -> CopyTokens | None:
    """The tokens a copy of the TransferFile ``row`` presents: those submitted with it, and the service's
    own for an end that came without one (tokens.tokens_for_copy); None when there are neither. A row
    without submitted tokens costs no query."""
    stored = {
        role: getattr(row, f"{role}_token") if getattr(row, f"{role}_token_id") else None
        for role in ("source", "destination")
    }
    given: dict[str, BearerToken] = {
        role: renewing(kept) for role, kept in stored.items() if kept is not None
    }
    if not given:
        return tokens_for_copy(source, destination)
    if len(given) < 2:
        own = tokens_for_copy(source, destination)
        if own is None:
            missing = "destination" if "source" in given else "source"
            raise TokenError(
                f"the file came without a {missing} token and the service has no issuer of its own"
            )
        given.setdefault("source", own.source)
        given.setdefault("destination", own.destination)
    return CopyTokens(source=given["source"], destination=given["destination"])
