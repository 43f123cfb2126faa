"""Which storage endpoint a transfer URL belongs to: the one gate every source and destination passes.

A URL from a request names a file the platform's workers will read or write with the service's own
credentials, so it must lie on a storage endpoint the platform knows (active, registered in the topology),
over a scheme that endpoint serves, under that endpoint's path prefix. Anything else (``file://``, a host
nobody registered, a port that is not the endpoint's, ``..`` in the path, credentials, a query string) is
refused with the reason, before anything is stored and again before anything is copied or deleted.

One query is accepted: ``wanio.pace=<bytes/s>``, the pace a copy asks of the source site's wanio plugin
(the push loop's share of a lane for one copy, ``paced``). It can only slow the copy that carries it (the
plugin holds it under the site's own pacing), and it is the only query an XRootD source is handed."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

ROOT_SCHEMES = ("root", "xroot")
HTTP_SCHEMES = ("davs", "https")
SERVED_SCHEMES = ROOT_SCHEMES + HTTP_SCHEMES
# gfal2's mock plugin: served by mock endpoints alone, where SRCNET_MOCK_STORAGE is on (benchmarks, tests)
MOCK_SCHEME = "mock"
DEFAULT_PORTS = {"root": 1094, "xroot": 1094, "davs": 443, "https": 443, MOCK_SCHEME: 443}
# How the registry keys a scheme: the protocols an endpoint's one port serves.
FAMILIES = {
    **dict.fromkeys(ROOT_SCHEMES, "root"),
    **dict.fromkeys(HTTP_SCHEMES, "http"),
    MOCK_SCHEME: MOCK_SCHEME,
}
MAX_URL_LENGTH = 1024
# Control characters, whitespace and backslashes have no place in a storage path; they only serve to
# confuse whoever logs, parses or passes the URL on.
_FORBIDDEN = re.compile(r"[\x00-\x20\x7f\\]")
# Once decoded, a name may hold a space (sent as %20), never a control character or a backslash.
_FORBIDDEN_DECODED = re.compile(r"[\x00-\x1f\x7f\\]")
PACE_KEY = "wanio.pace"
_PACE_QUERY = re.compile(re.escape(PACE_KEY) + r"=[1-9][0-9]{0,11}")
# The lowest pace the wanio plugin accepts (its kMinRequestedPacing, 64k bytes/s); below it the plugin
# refuses the ask and the copy runs at the site's pacing, so a copy never asks for less.
MIN_PACE_BYTES_PER_S = 64 * 1024


class UnregisteredStorageError(ValueError):
    """The URL is not on a registered storage endpoint; the message says why."""


@dataclass(frozen=True)
class EndpointRef:
    """What the check needs of a storage endpoint (a plain value: the registry outlives no query)."""

    name: str
    prefix: str
    audience: str = ""  # of the tokens its storage accepts (StorageEndpoint.audience)
    hostname: str = ""  # how Rucio and FTS name its audience when they ask an issuer for a token


@dataclass(frozen=True)
class StorageRegistry:
    """The active storage endpoints, keyed by (scheme family, host, port); loaded with one query so that
    a submission of 10 000 files costs one look-up, not 20 000."""

    endpoints: dict[tuple[str, str, int], EndpointRef]
    # URLs this registry resolved, and where: a copy's URLs are checked when it is refused or not and again
    # as it starts, against the registry its session read once. A registry lives for one submission, copy
    # session or check, so this holds at most their URLs.
    _resolved: dict[str, EndpointRef] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def load(cls) -> StorageRegistry:
        from topology.constants import mock_storage_allowed
        from topology.models import StorageEndpoint

        table: dict[tuple[str, str, int], EndpointRef] = {}
        rows = StorageEndpoint.objects.filter(is_active=True).only(
            "name", "hostname", "root_port", "http_port", "prefix", "token_audience", "tpc_scheme"
        )
        mock_allowed = mock_storage_allowed()
        for endpoint in rows:
            host = endpoint.hostname.lower()
            ref = EndpointRef(endpoint.name, endpoint.prefix, endpoint.audience, host)
            if endpoint.tpc_scheme == MOCK_SCHEME:  # serves mock:// alone, and nothing where mocks are off
                if mock_allowed:
                    table[(MOCK_SCHEME, host, endpoint.http_port)] = ref
                continue
            table[("root", host, endpoint.root_port)] = ref
            table[("http", host, endpoint.http_port)] = ref
        return cls(table)

    def resolve(self, url: object) -> EndpointRef:
        """The endpoint ``url`` lies on, or UnregisteredStorageError saying why it does not."""
        if isinstance(url, str) and (known := self._resolved.get(url)) is not None:
            return known
        endpoint = self._resolve(url)
        self._resolved[str(url)] = endpoint  # a URL that resolved is a str
        return endpoint

    def _resolve(self, url: object) -> EndpointRef:
        if not isinstance(url, str) or not url:
            raise UnregisteredStorageError("a URL is required")
        shown = _shown(url)
        if len(url) > MAX_URL_LENGTH:
            raise UnregisteredStorageError(f"{shown} is longer than {MAX_URL_LENGTH} characters")
        if _FORBIDDEN.search(url):
            raise UnregisteredStorageError(f"{shown} contains whitespace, a control character or a backslash")
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise UnregisteredStorageError(f"{shown} is not a valid URL ({exc})") from exc
        scheme = parts.scheme.lower()
        if scheme == MOCK_SCHEME and not any(key[0] == MOCK_SCHEME for key in self.endpoints):
            raise UnregisteredStorageError(
                f"{shown}: mock:// storage serves only the load benchmark and its tests (SRCNET_MOCK_STORAGE "
                "is off, or no mock endpoint is registered)"
            )
        if scheme not in SERVED_SCHEMES and scheme != MOCK_SCHEME:
            raise UnregisteredStorageError(
                f"{shown}: the scheme {parts.scheme or '(none)'!r} is not served by any storage endpoint "
                f"(use {', '.join(SERVED_SCHEMES)} on a registered endpoint)"
            )
        if parts.username is not None or parts.password is not None:
            raise UnregisteredStorageError(f"{shown}: credentials in a URL are not accepted")
        if parts.fragment or "#" in url:
            raise UnregisteredStorageError(f"{shown}: a fragment is not accepted")
        if ("?" in url or parts.query) and (url.count("?") > 1 or not _PACE_QUERY.fullmatch(parts.query)):
            raise UnregisteredStorageError(
                f"{shown}: a query string is not accepted (only {PACE_KEY}=<bytes per second>)"
            )
        host = (parts.hostname or "").lower()
        if not host:
            raise UnregisteredStorageError(f"{shown}: no host")
        port = port or DEFAULT_PORTS[scheme]
        endpoint = self.endpoints.get((FAMILIES[scheme], host, port))
        if endpoint is None:
            raise UnregisteredStorageError(
                f"{shown}: no registered storage endpoint serves {scheme} on {host}:{port}"
            )
        path = unquote(parts.path)
        if _FORBIDDEN_DECODED.search(path):
            raise UnregisteredStorageError(f"{shown}: the path contains a control character or a backslash")
        segments = path.split("/")
        if ".." in segments or "." in segments:
            raise UnregisteredStorageError(f"{shown}: '.' and '..' are not accepted in a storage path")
        # root:// paths are written with a double slash (root://host//srcnet/x); both mean /srcnet/x.
        normal = "/" + path.lstrip("/")
        if "//" in normal:
            raise UnregisteredStorageError(f"{shown}: the path has an empty segment ('//')")
        if not normal.startswith(endpoint.prefix):
            raise UnregisteredStorageError(
                f"{shown}: the path {normal!r} is outside the storage endpoint {endpoint.name}'s prefix "
                f"{endpoint.prefix!r}"
            )
        if normal == endpoint.prefix or normal.endswith("/"):
            raise UnregisteredStorageError(f"{shown}: no file name after the prefix")
        return endpoint


def storage_elements(endpoint: Any) -> list[str]:
    """Every ``scheme://host:port`` a copy to or from ``endpoint`` may be grouped under (as FTS3 groups
    links: by storage element)."""
    if endpoint.tpc_scheme == MOCK_SCHEME:
        return [f"{MOCK_SCHEME}://{endpoint.hostname}:{endpoint.http_port}"]
    return [f"{s}://{endpoint.hostname}:{endpoint.root_port}" for s in ROOT_SCHEMES] + [
        f"{s}://{endpoint.hostname}:{endpoint.http_port}" for s in HTTP_SCHEMES
    ]


def known_storage_element(element: str) -> bool:
    """True for ``*`` (FTS3's "any") and for the storage elements of registered endpoints."""
    from topology.models import StorageEndpoint

    if element == "*":
        return True
    endpoints = StorageEndpoint.objects.only("hostname", "root_port", "http_port", "tpc_scheme")
    return any(element in storage_elements(e) for e in endpoints)


def _shown(url: str) -> str:
    """The URL as an error message may quote it: bounded, printable."""
    text = url if len(url) <= 120 else url[:117] + "..."
    return repr(text)


def paced(url: str, bytes_per_second: float) -> str:
    """``url`` asking its source site for ``bytes_per_second``, whole, and at least the plugin's lowest
    (``MIN_PACE_BYTES_PER_S``)."""
    return f"{url}?{PACE_KEY}={max(MIN_PACE_BYTES_PER_S, int(bytes_per_second))}"


def resolve_storage_url(url: object) -> EndpointRef:
    """One URL against the endpoints registered now (a query each call: use StorageRegistry for many)."""
    return StorageRegistry.load().resolve(url)
