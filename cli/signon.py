"""Signing the CLI on through the platform's token issuer: the OAuth 2.0 device authorization grant
(RFC 8628), as a terminal without a browser needs. The control plane says where (``GET
/api/identity/sign-on/``: the issuer, the CLI's client, the audience and scopes); the person opens the
issuer's page, signs on and approves; the CLI keeps the refresh token (credentials.py) and asks for a fresh
access token when the last one is about to expire."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import requests

from .credentials import SignOn
from .errors import AuthError, ConnectionFailed, NotFound

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
# An access token with less life left than this is renewed before use.
RENEW_BEFORE_SECONDS = 60


def _call(session: requests.Session, method: str, url: str, **kwargs: Any) -> requests.Response:
    try:
        # The session's CA bundle (SRCNET_CA_BUNDLE) given outright: requests would let REQUESTS_CA_BUNDLE
        # from the environment win over a session's own.
        return session.request(method, url, timeout=30, verify=session.verify, **kwargs)
    except requests.RequestException as exc:
        raise ConnectionFailed(f"cannot reach the token issuer at {url}: {exc}") from exc


def sign_on_details(session: requests.Session, base_url: str) -> dict[str, Any]:
    answer = _call(session, "GET", f"{base_url}/api/identity/sign-on/")
    if answer.status_code == 404:
        raise NotFound(f"{base_url} offers no single sign-on: use a personal API token (SRCNET_TOKEN)")
    if answer.status_code != 200:
        raise ConnectionFailed(f"{base_url}/api/identity/sign-on/ answered {answer.status_code}")
    return dict(answer.json())


def discovery(session: requests.Session, issuer: str) -> dict[str, Any]:
    answer = _call(session, "GET", f"{issuer}/.well-known/openid-configuration")
    if answer.status_code != 200:
        raise ConnectionFailed(f"the issuer {issuer} has no discovery document ({answer.status_code})")
    return dict(answer.json())


def device_sign_on(
    session: requests.Session,
    base_url: str,
    scope: str,
    tell: Callable[[str], None],
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> SignOn:
    """Run the device grant to its end; ``tell`` shows the person where to go. AuthError when they refuse
    or let the code expire."""
    details = sign_on_details(session, base_url)
    issuer, client_id = str(details["issuer"]), str(details["cli_client_id"])
    document = discovery(session, issuer)
    endpoint = document.get("device_authorization_endpoint")
    if not endpoint:
        raise AuthError(f"the issuer {issuer} offers no device sign-on")
    wanted = ["openid", f"srcnet.{scope}"]
    if "offline_access" in (document.get("scopes_supported") or []):
        wanted.append("offline_access")  # a refresh token that outlives the issuer's browser session
    asked = {"client_id": client_id, "scope": " ".join(wanted), "audience": str(details["audience"])}
    started = _call(session, "POST", str(endpoint), data=asked)
    if started.status_code != 200:
        raise AuthError(
            f"the issuer refused to start a sign-on ({started.status_code}: {started.text[:200]})"
        )
    grant = started.json()
    where = grant.get("verification_uri_complete") or grant["verification_uri"]
    tell(f"To sign on, open {where}")
    tell(f"and check that it shows the code {grant['user_code']}; waiting for you to approve ...")
    deadline = time.monotonic() + float(grant.get("expires_in", 600))
    interval = float(grant.get("interval", 5))
    while time.monotonic() < deadline:
        sleep(interval)
        answer = _call(
            session,
            "POST",
            str(document["token_endpoint"]),
            data={"grant_type": DEVICE_GRANT, "device_code": grant["device_code"], "client_id": client_id},
        )
        body = answer.json() if answer.headers.get("Content-Type", "").startswith("application/json") else {}
        if answer.status_code == 200:
            return _signed_on(body, issuer, client_id, document)
        error = body.get("error", "")
        if error == "authorization_pending":
            continue
        if error == "slow_down":
            interval += 5
            continue
        if error == "access_denied":
            raise AuthError("the sign-on was refused at the issuer")
        if error == "expired_token":
            break
        raise AuthError(
            f"the issuer ended the sign-on: {error or answer.status_code} {body.get('error_description', '')}"
        )
    raise AuthError("the sign-on code expired before it was approved: run `srcnet auth login` again")


def _signed_on(body: dict[str, Any], issuer: str, client_id: str, document: dict[str, Any]) -> SignOn:
    if not body.get("refresh_token"):
        raise AuthError("the issuer gave no refresh token: the CLI cannot keep the sign-on")
    return SignOn(
        issuer=issuer,
        client_id=client_id,
        token_endpoint=str(document["token_endpoint"]),
        refresh_token=str(body["refresh_token"]),
        access_token=str(body.get("access_token", "")),
        expires_at=time.time() + float(body.get("expires_in", 0)),
        scope=str(body.get("scope", "")),
        revocation_endpoint=str(document.get("revocation_endpoint", "")),
    )


def fresh(session: requests.Session, sign_on: SignOn) -> bool:
    """Renew the access token if it is about to expire (the refresh token may be replaced too); True when
    ``sign_on`` changed and should be saved. AuthError when the issuer no longer takes the refresh token."""
    if sign_on.access_token and sign_on.expires_at - time.time() > RENEW_BEFORE_SECONDS:
        return False
    answer = _call(
        session,
        "POST",
        sign_on.token_endpoint,
        data={
            "grant_type": "refresh_token",
            "refresh_token": sign_on.refresh_token,
            "client_id": sign_on.client_id,
        },
    )
    if answer.status_code != 200:
        raise AuthError("your sign-on has expired or was revoked at the issuer: run `srcnet auth login`")
    body = answer.json()
    sign_on.access_token = str(body["access_token"])
    sign_on.expires_at = time.time() + float(body.get("expires_in", 0))
    sign_on.refresh_token = str(body.get("refresh_token") or sign_on.refresh_token)
    return True


def revoke(session: requests.Session, sign_on: SignOn) -> bool:
    """Ask the issuer to forget the refresh token (best effort: True if it said so)."""
    if not sign_on.revocation_endpoint:
        return False
    answer = _call(
        session,
        "POST",
        sign_on.revocation_endpoint,
        data={
            "token": sign_on.refresh_token,
            "token_type_hint": "refresh_token",
            "client_id": sign_on.client_id,
        },
    )
    return answer.status_code == 200
