"""The portal as an OpenID Connect client of the sign-on issuer: the authorization code flow with PKCE
(RFC 7636, S256), a state against forged callbacks and a nonce against replayed ID tokens.

The issuer's endpoints come from its discovery document; its ID tokens are checked for signature (its
published keys), issuer, audience (our client), lifetime and nonce."""

from __future__ import annotations

import base64
import hashlib
import secrets
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import jwt
import requests

from transfers.submitted_tokens import SIGNING_ALGORITHMS, IssuerKeys

from .sso import SsoSettings

DISCOVERY_CACHE_SECONDS = 300
LEEWAY_SECONDS = 30


class SignOnFailed(Exception):
    """The sign-on did not complete; the message says why, for the person and the log."""


_discovered: dict[str, tuple[float, dict[str, Any]]] = {}
_keys: dict[str, IssuerKeys] = {}
_lock = threading.Lock()


def discovery(conf: SsoSettings) -> dict[str, Any]:
    with _lock:
        cached = _discovered.get(conf.issuer)
    if cached and time.monotonic() - cached[0] < DISCOVERY_CACHE_SECONDS:
        return cached[1]
    try:
        answer = requests.get(
            f"{conf.issuer}/.well-known/openid-configuration", verify=conf.verify, timeout=30
        )
        answer.raise_for_status()
        document = dict(answer.json())
    except (requests.RequestException, ValueError) as exc:
        raise SignOnFailed(f"the sign-on issuer {conf.issuer} could not be reached: {exc}") from exc
    if str(document.get("issuer", "")).rstrip("/") != conf.issuer:
        raise SignOnFailed(f"the issuer's discovery document names another issuer ({document.get('issuer')})")
    with _lock:
        _discovered[conf.issuer] = (time.monotonic(), document)
    return document


@dataclass(frozen=True)
class Attempt:
    """What the portal keeps in the session between sending the browser to the issuer and its return."""

    state: str
    nonce: str
    verifier: str
    next_url: str

    def as_session(self) -> dict[str, str]:
        return {"state": self.state, "nonce": self.nonce, "verifier": self.verifier, "next": self.next_url}

    @classmethod
    def from_session(cls, kept: Any) -> Attempt | None:
        if not isinstance(kept, dict) or not all(
            isinstance(kept.get(k), str) for k in ("state", "nonce", "verifier")
        ):
            return None
        return cls(kept["state"], kept["nonce"], kept["verifier"], str(kept.get("next") or "/"))


def challenge_of(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def new_attempt(next_url: str) -> Attempt:
    return Attempt(secrets.token_urlsafe(24), secrets.token_urlsafe(24), secrets.token_urlsafe(48), next_url)


def authorization_url(conf: SsoSettings, attempt: Attempt, redirect_uri: str) -> str:
    query = {
        "response_type": "code",
        "client_id": conf.client_id,
        "redirect_uri": redirect_uri,
        "scope": conf.scopes,
        "state": attempt.state,
        "nonce": attempt.nonce,
        "code_challenge": challenge_of(attempt.verifier),
        "code_challenge_method": "S256",
    }
    return f"{discovery(conf)['authorization_endpoint']}?{urlencode(query)}"


def redeem(conf: SsoSettings, attempt: Attempt, code: str, redirect_uri: str) -> dict[str, Any]:
    """The issuer's tokens for ``code`` (with the PKCE verifier and our client's secret)."""
    try:
        answer = requests.post(
            discovery(conf)["token_endpoint"],
            data={
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": redirect_uri,
                "code_verifier": attempt.verifier,
                "client_id": conf.client_id,
            },
            auth=(conf.client_id, conf.client_secret) if conf.client_secret else None,
            verify=conf.verify,
            timeout=30,
        )
    except requests.RequestException as exc:
        raise SignOnFailed(f"the sign-on issuer could not be reached: {exc}") from exc
    if answer.status_code != 200:
        raise SignOnFailed(f"the issuer refused the sign-on code ({answer.status_code}: {answer.text[:200]})")
    return dict(answer.json())


def verified_id_token(conf: SsoSettings, value: str, nonce: str) -> dict[str, Any]:
    """The ID token's claims, once its signature, issuer, audience, lifetime and nonce hold."""
    try:
        header = jwt.get_unverified_header(value)
        algorithm = str(header.get("alg", ""))
        if algorithm not in SIGNING_ALGORITHMS:
            raise SignOnFailed(f"the ID token's algorithm {algorithm!r} is not accepted")
        keys = _keys.setdefault(conf.ca_file, IssuerKeys(conf.ca_file))
        claims = jwt.decode(
            value,
            keys.key(conf.issuer, str(header.get("kid", ""))),
            algorithms=[algorithm],
            audience=conf.client_id,
            issuer=conf.issuer,
            leeway=LEEWAY_SECONDS,
            options={"require": ["exp", "iat", "iss", "aud", "sub"]},
        )
    except SignOnFailed:
        raise
    except Exception as exc:  # PyJWT's errors and TokenRefused from the key lookup
        raise SignOnFailed(f"the ID token is refused: {exc}") from exc
    if not secrets.compare_digest(str(claims.get("nonce", "")), nonce):
        raise SignOnFailed("the ID token's nonce is not this sign-on's")
    return dict(claims)


def userinfo(conf: SsoSettings, access_token: str) -> dict[str, Any]:
    """The issuer's userinfo for the person (groups are often there rather than in the ID token)."""
    endpoint = discovery(conf).get("userinfo_endpoint")
    if not endpoint:
        return {}
    try:
        answer = requests.get(
            endpoint, headers={"Authorization": f"Bearer {access_token}"}, verify=conf.verify, timeout=30
        )
    except requests.RequestException as exc:
        raise SignOnFailed(f"the issuer's userinfo could not be read: {exc}") from exc
    return dict(answer.json()) if answer.status_code == 200 else {}
