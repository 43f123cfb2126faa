"""What an attacker does to a real token (tests/tokens/test_site_enforcement.py against the local sites,
tests/deploy/test_tokens.py against the Ansible-deployed ones), and what XRootD's token plugin
(scitokens-cpp) writes in the site's log when it refuses each."""

from __future__ import annotations

import base64
import json
import time

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

KINDS = ("alg-none", "tampered-scope", "tampered-signature", "expired-claim")
WHY = {
    "alg-none": "wrong algorithm",
    "tampered-scope": "evp verify final failed",
    "tampered-signature": "evp verify final failed",
    "expired-claim": "evp verify final failed",
    "stranger-issuer": "not in list of allowed issuers",
}


def _part(token: str, index: int) -> dict[str, object]:
    part = token.split(".")[index]
    return dict(json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))))


def claims(token: str) -> dict[str, object]:
    return _part(token, 1)


def jose_header(token: str) -> dict[str, object]:
    return _part(token, 0)


def encode(part: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(part).encode()).decode().rstrip("=")


def _replaced(token: str, *, header: dict[str, object] | None = None, body: dict[str, object] | None = None,
              signature: str | None = None) -> str:  # fmt: skip
    head, payload, sig = token.split(".")
    return ".".join(
        [
            encode(header) if header is not None else head,
            encode(body) if body is not None else payload,
            sig if signature is None else signature,
        ]
    )


def forge(real: str, kind: str) -> str:
    """``real`` (a valid token) made into the forgery ``kind`` (one of KINDS)."""
    body = claims(real)
    if kind == "alg-none":
        return _replaced(real, header={**jose_header(real), "alg": "none"}, signature="")
    if kind == "tampered-scope":
        return _replaced(real, body={**body, "scope": "storage.read:/ storage.modify:/"})
    if kind == "tampered-signature":
        head, payload, sig = real.split(".")
        return ".".join([head, payload, sig[:-4] + ("AAAA" if sig[-4:] != "AAAA" else "BBBB")])
    if (
        kind == "expired-claim"
    ):  # a real token's exp moved into the past: a tampering, refused on its signature
        return _replaced(real, body={**body, "exp": int(body["iat"]) - 60})  # type: ignore[call-overload]
    raise ValueError(kind)


def stranger_token(real: str, issuer: str = "https://issuer.attacker.example/realms/srcnet") -> str:
    """``real``'s claims, issued and signed by an issuer of the attacker's own (a key made here): the site
    must refuse it for its issuer before looking for a key."""
    key = (
        rsa.generate_private_key(public_exponent=65537, key_size=2048)
        .private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        .decode()
    )
    now = int(time.time())
    body = {**claims(real), "iss": issuer, "iat": now, "nbf": now, "exp": now + 600}
    return jwt.encode(body, key, algorithm="RS256", headers={"kid": "attacker"})
