"""The token doctor's checks: what a copy will need of the token issuer and of both storage sites of a lane
(or of one storage endpoint), each problem said in one line with what to change (docs/tokens.md). Which
lanes to check (those the push plan uses) is ``operations/token_doctor.py``'s, which ``srcnet tokens check``
and ``GET /api/operations/tokens/check/`` run.

The failures it looks for are those operators meet: an issuer that does not answer or whose clock is off;
a client without the ``storage.*`` scopes; an issuer that ignores the audience asked for, or a site that
does not accept its own; lifetimes shorter than a lane's longest copy; refresh tokens that work only once.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import requests

from .gfal_context import new_context
from .tokens import IssuerSettings, Token, TokenClient, TokenError

# More than this between the issuer's clock and ours and tokens look not yet valid or already expired.
MAX_CLOCK_SKEW_SECONDS = 30.0
# Copies are assumed this large when no product is known yet (bytes).
DEFAULT_LARGEST_FILE = 1 << 30
PROBE_SCOPE_PATH = "/"


@dataclass(frozen=True)
class Finding:
    """One check's outcome: ``ok`` False is a problem, said in ``message`` with ``fix`` (what to change)."""

    check: str
    subject: str
    ok: bool
    message: str
    fix: str = ""

    def line(self) -> str:
        if self.ok:
            return f"ok       {self.subject}: {self.message}"
        return f"PROBLEM  {self.subject}: {self.message}" + (f"; fix: {self.fix}" if self.fix else "")


@dataclass(frozen=True)
class LaneToCheck:
    source: Any  # StorageEndpoint
    destination: Any
    rate_bps: float
    largest_file: int

    @property
    def name(self) -> str:
        return f"{self.source.name}:{self.destination.name}"


def check_issuer(issuer: IssuerSettings) -> list[Finding]:
    """The issuer answers its discovery document, publishes keys, and keeps our time."""
    subject = issuer.url
    try:
        answer = requests.get(
            f"{issuer.url.rstrip('/')}/.well-known/openid-configuration", verify=issuer.verify, timeout=15
        )
        answer.raise_for_status()
        document = answer.json()
    except (requests.RequestException, ValueError) as exc:
        return [
            Finding(
                "issuer",
                subject,
                False,
                f"the issuer does not answer its discovery document ({type(exc).__name__}: {exc})",
                "check SRCNET_TOKEN_ISSUER (the URL tokens carry as iss), the network, and "
                "SRCNET_TOKEN_CA_FILE",
            )
        ]
    findings = [Finding("issuer", subject, True, "discovery answered")]
    if document.get("issuer") != issuer.url.rstrip("/"):
        findings.append(
            Finding(
                "issuer",
                subject,
                False,
                f"the issuer calls itself {document.get('issuer')!r}: storage checks tokens' iss against "
                "the URL "
                "it trusts",
                "set SRCNET_TOKEN_ISSUER to the issuer's own name for itself",
            )
        )
    try:
        keys = requests.get(document["jwks_uri"], verify=issuer.verify, timeout=15).json().get("keys", [])
    except (requests.RequestException, ValueError, KeyError) as exc:
        keys = []
        findings.append(Finding("keys", subject, False, f"its keys (JWKS) could not be read: {exc}"))
    findings.append(
        Finding("keys", subject, True, f"it publishes {len(keys)} signing key(s)")
        if keys
        else Finding("keys", subject, False, "it publishes no signing key: no storage can verify its tokens")
    )
    return findings


def _token(client: TokenClient, scopes: list[str], endpoint: Any, findings: list[Finding]) -> Token | None:
    subject = endpoint.name
    try:
        token = client.fetch(scopes, endpoint.audience)
    except TokenError as exc:
        findings.append(
            Finding(
                "scopes",
                subject,
                False,
                str(exc),
                f"let the client {client.issuer.client_id} ask for "
                f"{' '.join(s.split(':')[0] for s in scopes)} "
                f"(path-parameterised scopes) and for the audience {endpoint.audience}",
            )
        )
        return None
    granted = set(token.scope.split())
    missing = [s for s in scopes if s not in granted]
    findings.append(
        Finding(
            "scopes",
            subject,
            not missing,
            f"granted {' '.join(sorted(granted)) or '(nothing)'}"
            + (f", not {' '.join(missing)}" if missing else ""),
            ""
            if not missing
            else f"grant the client {client.issuer.client_id} the storage.* scopes it asks for",
        )
    )
    from .tokens import AUDIENCE_SCOPE_PREFIX

    audience = _claims(token.value).get("aud")
    audiences = audience if isinstance(audience, list) else [audience]
    findings.append(
        Finding(
            "audience",
            subject,
            endpoint.audience in audiences,
            f"tokens carry the audience {audience!r} (the site accepts {endpoint.audience!r})",
            ""
            if endpoint.audience in audiences
            else "make the issuer honour the audience asked for (SRCNET_TOKEN_AUDIENCE_STYLE: parameter for "
            f"INDIGO IAM, scope for an {AUDIENCE_SCOPE_PREFIX}<audience> client scope), or correct the "
            "endpoint's token_audience",
        )
    )
    return token


def _claims(token: str) -> dict[str, Any]:
    import base64
    import json

    try:
        payload = token.split(".")[1]
        return dict(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))
    except (IndexError, ValueError):
        return {}


def check_endpoint(client: TokenClient, endpoint: Any, *, write: bool) -> list[Finding]:
    """The tokens a copy needs at ``endpoint`` (reading, and with ``write`` writing) are granted, carry its
    audience, the site accepts them, and they can be refreshed more than once."""
    findings: list[Finding] = []
    read = _token(client, [f"storage.read:{PROBE_SCOPE_PATH}"], endpoint, findings)
    if write:
        _token(
            client,
            [f"storage.create:{PROBE_SCOPE_PATH}", f"storage.modify:{PROBE_SCOPE_PATH}"],
            endpoint,
            findings,
        )
    if read is not None:
        findings.append(_site_accepts(endpoint, read))
        findings.append(_refreshes(client, read, endpoint.name))
    return findings


def check_clock(client: TokenClient) -> list[Finding]:
    """The issuer's clock against ours, read from a token's ``iat`` (storage compares ``nbf`` and ``exp``
    with its own clock)."""
    try:
        answer = client.fetch([f"storage.read:{PROBE_SCOPE_PATH}"], "")
    except TokenError:
        return []  # the scopes checks say why
    issued = _claims(answer.value).get("iat")
    if not isinstance(issued, int | float):
        return [
            Finding("clock", client.issuer.url, False, "its tokens carry no iat", "use a WLCG profile issuer")
        ]
    skew = float(issued) - (time.time() - (answer.lifetime - answer.seconds_left()))
    ok = abs(skew) <= MAX_CLOCK_SKEW_SECONDS
    return [
        Finding(
            "clock",
            client.issuer.url,
            ok,
            f"its clock is {skew:+.0f} s from ours",
            "" if ok else "synchronise both clocks (NTP)",
        )
    ]


def _site_accepts(endpoint: Any, token: Token) -> Finding:
    """Stat the endpoint's prefix with the token, as a copy's first look at the storage does."""
    import gfal2

    url = endpoint.url("davs", "")
    ctx = new_context()
    ctx.cred_set(url, ctx.cred_new("BEARER", token.value))
    try:
        ctx.stat(url)
    except gfal2.GError as exc:
        code = getattr(exc, "code", None)
        if code == 2:  # not there, but we were let in to look
            return Finding("storage", endpoint.name, True, "the site accepts the token")
        return Finding(
            "storage",
            endpoint.name,
            False,
            f"the site refused the token ({exc})",
            f"the site's token configuration must trust the issuer {token_issuer(token)} and the audience "
            f"{endpoint.audience}, with base path {endpoint.prefix}",
        )
    return Finding("storage", endpoint.name, True, "the site accepts the token")


def token_issuer(token: Token) -> str:
    return str(_claims(token.value).get("iss", "?"))


def _refreshes(client: TokenClient, token: Token, subject: str) -> Finding:
    if not token.refresh_token:
        return Finding(
            "refresh",
            subject,
            True,
            "no refresh token: the service asks for a new token when one runs low",
        )
    try:
        client.refresh(token)
        client.refresh(token)  # the same refresh token a second time: a long copy renews more than once
    except TokenError as exc:
        return Finding(
            "refresh",
            subject,
            False,
            f"a refresh token works only once ({exc})",
            "allow refresh tokens to be reused (Keycloak: revoke refresh token off; INDIGO IAM: reuse "
            "refresh "
            "tokens on)",
        )
    return Finding("refresh", subject, True, "refresh tokens serve more than once")


def check_lane(client: TokenClient, lane: LaneToCheck) -> list[Finding]:
    """Both ends of a lane, and token lifetimes against its longest copy at its planned rate."""
    findings: list[Finding] = []
    source = _token(client, [f"storage.read:{PROBE_SCOPE_PATH}"], lane.source, findings)
    destination = _token(
        client,
        [f"storage.create:{PROBE_SCOPE_PATH}", f"storage.modify:{PROBE_SCOPE_PATH}"],
        lane.destination,
        findings,
    )
    findings = [replace_subject(f, lane.name) for f in findings]
    longest = lane.largest_file * 8 / lane.rate_bps if lane.rate_bps > 0 else 0.0
    for token in (t for t in (source, destination) if t is not None):
        enough = token.lifetime >= longest
        findings.append(
            Finding(
                "lifetime",
                lane.name,
                enough or bool(token.refresh_token),
                f"tokens live {token.lifetime:.0f} s; the lane's longest copy takes about {longest:.0f} s "
                "at its "
                f"planned {lane.rate_bps / 1e9:.2f} Gbit/s"
                + (
                    ""
                    if enough
                    else " (the service renews them during the copy)"
                    if token.refresh_token
                    else ""
                ),
                ""
                if enough or token.refresh_token
                else f"ask the issuer for tokens living at least {longest:.0f} s, or for refresh tokens",
            )
        )
    return findings


def replace_subject(finding: Finding, lane: str) -> Finding:
    return Finding(finding.check, f"{lane} ({finding.subject})", finding.ok, finding.message, finding.fix)


def as_dicts(findings: Iterable[Finding]) -> list[dict[str, Any]]:
    return [asdict(f) for f in findings]
