"""Where the server is and who we are: ``--url``/``--token`` flags, else SRCNET_URL/SRCNET_TOKEN, else the
sign-on ``srcnet auth login`` kept (credentials.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .credentials import config_dir
from .errors import UsageError

DEFAULT_URL = "http://127.0.0.1:8000"
DEFAULT_HTTP_TIMEOUT = 30.0


@dataclass(frozen=True)
class Config:
    url: str
    token: str | None
    url_from: str  # where the URL came from, for error messages: "--url", "SRCNET_URL" or "default"
    http_timeout: float = DEFAULT_HTTP_TIMEOUT
    # Where the sign-on is kept, and the CA bundle the server's and the issuer's certificates are checked
    # against (SRCNET_CA_BUNDLE; else requests' REQUESTS_CA_BUNDLE or its own).
    config_dir: Path = field(default_factory=lambda: config_dir({}))
    ca_bundle: str | None = None


def load_config(*, url: str | None, token: str | None, env: Mapping[str, str]) -> Config:
    if url:
        source = "--url"
    elif env.get("SRCNET_URL"):
        url, source = env["SRCNET_URL"], "SRCNET_URL"
    else:
        url, source = DEFAULT_URL, "default"
    token = token or env.get("SRCNET_TOKEN") or None
    try:
        http_timeout = float(env.get("SRCNET_HTTP_TIMEOUT", DEFAULT_HTTP_TIMEOUT))
    except ValueError:
        raise UsageError(
            f"SRCNET_HTTP_TIMEOUT must be a number of seconds, not {env['SRCNET_HTTP_TIMEOUT']!r}"
        ) from None
    return Config(
        url=url.rstrip("/"),
        token=token,
        url_from=source,
        http_timeout=http_timeout,
        config_dir=config_dir(env),
        ca_bundle=env.get("SRCNET_CA_BUNDLE") or None,
    )
