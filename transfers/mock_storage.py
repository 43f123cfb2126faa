"""Copies between mock storage endpoints: gfal2's mock plugin (Debian's ``gfal2-plugin-mock``, the plugin
FTS3's own stress tests use), so that the control plane can be loaded at SKA's file rate without moving a
byte.

The plugin keeps no state: what a ``mock://`` URL "holds" is what its query says (``size``, ``checksum``), and
what a copy to it does is what the destination's query says (``size_pre``/``size_post``: the sizes a copy
sees before and after, ``time``: its seconds). The platform builds plain ``mock://host:port/prefix/path``
URLs, checked like any other against the registered endpoints; just before the copy, each gets the query
that makes it the catalogue's file: the source holds ``filesize`` bytes of checksum ``adler32``, the
destination is absent before and the same file after, at once. A copy drawn to fail (``failure_fraction``,
SRCNET_MOCK_FAILURE_FRACTION) ends with the destination's checksum differing, as a corrupted copy would:
gfal2 reports the mismatch and the service retries it like any other. The draw is a hash of the file's path
and the attempt's number, so a run repeats exactly, and each attempt of a file is drawn anew.
"""

from __future__ import annotations

import zlib
from urllib.parse import urlsplit

from topology.services.storage_urls import MOCK_SCHEME

# What a failed mock copy leaves at its destination: a checksum no file of the catalogue has by chance.
CORRUPTED_ADLER32 = "00000001"


def is_mock(url: str) -> bool:
    return url.partition("://")[0].lower() == MOCK_SCHEME


def as_copied(
    source: str,
    destination: str,
    *,
    filesize: int | None,
    checksum: str,
    failure_fraction: float = 0.0,
    attempt: int = 1,
) -> tuple[str, str]:
    """The two URLs of a copy between mock endpoints as the mock plugin takes them (unchanged unless both
    are mock://). ``checksum`` is the copy's ``ADLER32:<hex>`` (empty: the plugin's default); ``attempt``
    the attempt's number (its draw among ``failure_fraction``)."""
    if not (is_mock(source) and is_mock(destination)):
        return source, destination
    size = int(filesize or 0)
    _, _, adler32 = checksum.partition(":")
    adler32 = adler32.lower()
    fails = failure_fraction > 0 and drawn(destination, attempt) < failure_fraction
    arrived = CORRUPTED_ADLER32 if fails else adler32
    held = f"size={size}" + (f"&checksum={adler32}" if adler32 else "")
    copied = f"size={size}&size_pre=0&size_post={size}&time=0" + (f"&checksum={arrived}" if arrived else "")
    return f"{_bare(source)}?{held}", f"{_bare(destination)}?{copied}"


def drawn(destination: str, attempt: int) -> float:
    """A number in [0, 1) fixed by the destination's path and the attempt's number."""
    key = f"{urlsplit(destination).path}#{attempt}".encode()
    return zlib.crc32(key) / 2**32


def _bare(url: str) -> str:
    """The URL without a query (a mock URL that already has one keeps none of it: only this module's own)."""
    return url.partition("?")[0]
