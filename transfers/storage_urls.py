"""Storage URLs (pure): which storage element a URL belongs to, as FTS3 groups links."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

# mock: gfal2's mock plugin; only mock endpoints serve it, where SRCNET_MOCK_STORAGE is on (the registry's
# check, topology/services/storage_urls.py, is what refuses it elsewhere).
SUPPORTED_SCHEMES = ("root", "xroot", "davs", "https", "http", "file", "mock")


def with_opaque(url: str, pair: str) -> str:
    """``url`` with ``pair`` (``name=value``, or several joined by ``&``) added to its opaque part."""
    return f"{url}{'&' if '?' in url else '?'}{pair}"


def without_opaque(url: str, name: str) -> str:
    """``url`` without its opaque parameter ``name``."""
    base, quest, query = url.partition("?")
    kept = [p for p in query.split("&") if p and p.partition("=")[0] != name]
    return f"{base}?{'&'.join(kept)}" if quest and kept else base


def storage_element(url: str) -> str:
    """``scheme://host:port`` of a transfer URL; raises ValueError for anything that is not one."""
    if not isinstance(url, str) or not url:
        raise ValueError("a URL is required")
    parts = urlsplit(url)
    if parts.scheme not in SUPPORTED_SCHEMES:
        raise ValueError(f"unsupported scheme {parts.scheme!r} (use one of {', '.join(SUPPORTED_SCHEMES)})")
    if parts.scheme != "file" and not parts.hostname:
        raise ValueError(f"no host in {url!r}")
    if not parts.path or parts.path == "/":
        raise ValueError(f"no file path in {url!r}")
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname or ''}{port}"


def default_symbolicname(source_se: str, dest_se: str) -> str:
    """The FTS3 symbolic name of a link configured without one: its pair, spelled so that it fits one URL
    path segment (``GET /config/links/{name}``), e.g. ``root-127.0.0.1-1094--root-127.0.0.1-1095``."""

    def slug(element: str) -> str:
        return re.sub(r"[^A-Za-z0-9.*_]+", "-", element).strip("-") or "-"

    return f"{slug(source_se)}--{slug(dest_se)}"
