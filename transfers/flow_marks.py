"""A copy's SciTags flow identifier on its way to the storage (docs/network.md, "Marking on the wire").

Debian's gfal2 2.21.3 has no ``scitag`` transfer parameter (2.22's sets the ``SciTag`` header itself), so:

- root:// third-party copies carry ``scitag.flow=N`` in the source URL's opaque part, the field's
  convention (XRootD's packet marking may use it), and ``tpc.scgi=scitag.flow=N`` in the destination's:
  Debian's XrdCl 5.5 forwards a source's CGI to the pulling site only when it delegates a credential
  (never, here), and the destination's server appends ``tpc.scgi`` to the source URL it hands its copy
  program (``xrdcp-wan``: the IPv6 flow label of its connections to the source);
- HTTP third-party copies carry the header ``SciTag: N`` to the destination (which sites map into the
  open's CGI with ``http.header2cgi SciTag scitag.flow``) and ``TransferHeaderSciTag: N``, which the
  pulling site passes on to the source as ``SciTag: N``, through gfal2's per-storage custom headers
  (``[DAV:<HOST>] HEADERS``; set for every copy on a context that copy sessions share, so nothing leaks
  to the next one)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from topology.services.storage_urls import HTTP_SCHEMES, ROOT_SCHEMES

from .storage_urls import with_opaque


def valid(scitag: int | None) -> int | None:
    """The flow identifier if it is one (65..65535), else None (nothing is marked)."""
    return scitag if isinstance(scitag, int) and 65 <= scitag <= 65535 else None


def marked_root_urls(source: str, destination: str, scitag: int | None) -> tuple[str, str]:
    """A root:// third-party copy's URLs with its flow identifier: ``scitag.flow`` on the source,
    ``tpc.scgi=scitag.flow=N`` on the destination (others, and unmarked copies, as they are)."""
    flow = valid(scitag)
    roots = all(url.partition("://")[0] in ROOT_SCHEMES for url in (source, destination))
    if flow is None or not roots or "scitag.flow=" in source or "tpc.scgi=" in destination:
        return source, destination
    return with_opaque(source, f"scitag.flow={flow}"), with_opaque(
        destination, f"tpc.scgi=scitag.flow={flow}"
    )


def http_header_group(url: str) -> str:
    """gfal2's per-storage option group of an HTTP URL: its protocol without a trailing "s" and its host,
    upper case (``davs://host:8443/p`` -> ``DAV:HOST``)."""
    parts = urlsplit(url)
    scheme = parts.scheme[:-1] if parts.scheme.endswith("s") else parts.scheme
    return f"{scheme}:{parts.hostname or ''}".upper()


def mark_http_copy(ctx: Any, destination: str, scitag: int | None, *, reused: bool = False) -> list[str]:
    """Set the SciTag headers of an HTTP third-party copy to ``destination`` on gfal2 context ``ctx``;
    returns the headers set (none for another scheme or no flow identifier). On a ``reused`` context (a copy
    session's), an unmarked copy clears what an earlier copy to the same host set."""
    flow = valid(scitag)
    if destination.partition("://")[0] not in HTTP_SCHEMES:
        return []
    if flow is None:
        if reused:
            ctx.set_opt_string_list(http_header_group(destination), "HEADERS", [])
        return []
    headers = [f"SciTag: {flow}", f"TransferHeaderSciTag: {flow}"]
    ctx.set_opt_string_list(http_header_group(destination), "HEADERS", headers)
    return headers
