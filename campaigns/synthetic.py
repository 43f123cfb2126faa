"""Synthetic observatory data products for data-challenge campaigns: real files written to an SDP storage
over the XRootD protocol (the tests write theirs the same way)."""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass

CHUNK = 4 * 1024 * 1024


@dataclass(frozen=True)
class WrittenFile:
    name: str
    size_bytes: int
    adler32: str


class UploadError(RuntimeError):
    """Writing a synthetic file to storage failed."""


from transfers.tokens import url_with_token as with_token  # noqa: E402  (root:// URLs carry their token)


def write_file(url: str, size_bytes: int, *, seed: int, token: str = "") -> str:
    """Write ``size_bytes`` of seeded pseudo-random data to ``url`` (root://), with ``token`` (a
    ``storage.create`` token for the file's directory at a token-enforcing site); return its adler32."""
    from XRootD import client
    from XRootD.client.flags import OpenFlags

    handle = client.File()
    status, _ = handle.open(with_token(url, token), OpenFlags.NEW | OpenFlags.MAKEPATH)
    if not status.ok:
        raise UploadError(f"open {url}: {status.message}")
    checksum = 1
    # A cheap reproducible stream: one random block, rotated per chunk, so files differ and don't compress.
    block = os.urandom(CHUNK) if seed < 0 else _seeded_block(seed)
    offset = 0
    try:
        while offset < size_bytes:
            length = min(CHUNK, size_bytes - offset)
            shift = (offset // CHUNK) % CHUNK
            data = (block[shift:] + block[:shift])[:length]
            status, _ = handle.write(data, offset=offset, size=length)
            if not status.ok:
                raise UploadError(f"write {url} at {offset}: {status.message}")
            checksum = zlib.adler32(data, checksum)
            offset += length
    finally:
        handle.close()
    return f"{checksum & 0xFFFFFFFF:08x}"


def remove_file(url: str, *, token: str = "") -> None:
    """Delete the file at ``url`` (root://host:port//path) from its storage (with a ``storage.modify``
    token for its directory at a token-enforcing site)."""
    from urllib.parse import urlsplit

    from XRootD import client

    parts = urlsplit(url)
    status, _ = client.FileSystem(f"root://{parts.netloc}").rm(with_token(parts.path, token))
    if not status.ok:
        raise UploadError(f"rm {url}: {status.message}")


def _seeded_block(seed: int) -> bytes:
    import random

    return random.Random(seed).randbytes(CHUNK)
