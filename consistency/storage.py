"""Reading a storage endpoint as a consistency check needs it: list, stat, and adler32 from the bytes.

gfal2, as the transfer executor uses it (``transfers/gfal_context.py``), over the endpoint's copy scheme
(root:// or davs://), with a ``storage.read`` token on the endpoint's whole tree when an issuer is
configured (the checker reads everywhere and writes nothing).

The adler32 is computed here from the bytes read, never asked of the server: XRootD keeps a file's checksum
in an extended attribute once computed and answers from it while the file's time is unchanged, so a disk
that flipped bits under an unchanged time would go on answering the checksum of the file as it was.
"""

from __future__ import annotations

import datetime as dt
import errno
import stat as stat_module
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from topology.choices import TpcScheme
from topology.models import StorageEndpoint
from topology.tpc_streams import ROOT_SCHEMES
from transfers.gfal_context import describe_error, new_context
from transfers.tokens import TokenError, service_client, url_with_token

READ_CHUNK = 4 * 1024 * 1024
# Names that are not UTF-8 in one directory before its listing is given up as unreadable.
MAX_UNDECODABLE = 1000


class StorageReadError(Exception):
    """A look at the storage failed (``absent`` when it says the path does not exist)."""

    def __init__(self, message: str, *, absent: bool = False) -> None:
        super().__init__(message)
        self.absent = absent


@dataclass(frozen=True)
class Entry:
    """One directory entry: its name, whether it is a directory, its size and time."""

    name: str
    is_dir: bool
    size: int
    modified: dt.datetime | None


class StorageReader:
    """Lists, stats and reads one endpoint's files, by paths below its prefix."""

    def __init__(self, endpoint: StorageEndpoint, *, context: Any = None) -> None:
        self.endpoint = endpoint
        self.scheme = (
            endpoint.tpc_scheme if endpoint.tpc_scheme in (TpcScheme.ROOT, TpcScheme.DAVS) else "davs"
        )
        self._token = self._read_token(endpoint)
        self._ctx = context or new_context()
        if self._token and self.scheme not in ROOT_SCHEMES:
            self._ctx.cred_set(self.url(""), self._ctx.cred_new("BEARER", self._token))

    @staticmethod
    def _read_token(endpoint: StorageEndpoint) -> str:
        client = service_client()
        if client is None:
            return ""
        try:
            return client.fetch(["storage.read:/"], endpoint.audience).value
        except TokenError as exc:
            raise StorageReadError(f"TOKEN {exc}") from exc

    def url(self, path: str) -> str:
        url = self.endpoint.url(self.scheme, path)
        if path.endswith("/") or not path:
            url = url if url.endswith("/") else url + "/"
        return url_with_token(url, self._token) if self._token and self.scheme in ROOT_SCHEMES else url

    def _call(self, what: str, path: str, fn: Any, *args: Any) -> Any:
        import gfal2

        try:
            return fn(*args)
        except gfal2.GError as exc:
            code = getattr(exc, "code", None)
            raise StorageReadError(
                f"{what} {path or '/'}: {describe_error(exc)}", absent=code == errno.ENOENT
            ) from exc

    def list_directory(self, path: str) -> Iterator[Entry]:
        """The entries of the directory ``path`` ("" = the prefix), streamed as the storage returns them.
        Raises StorageReadError (also part way: the caller then has not seen all of it); a name that is not
        UTF-8 raises it too, naming the directory."""
        directory = self._call(
            "list", path, self._ctx.opendir, self.url(path.rstrip("/") + "/" if path else "")
        )
        undecodable = 0
        while True:
            try:
                dirent, st = self._call("list", path, directory.readpp)
            except UnicodeDecodeError as exc:
                # gfal2 read the entry, then could not decode its name: the listing goes on after it. A
                # directory of nothing else is not listed to its end.
                undecodable += 1
                if undecodable > MAX_UNDECODABLE:
                    raise StorageReadError(
                        f"list {path or '/'}: more than {MAX_UNDECODABLE} names that are not UTF-8"
                    ) from exc
                raw = exc.object if isinstance(exc.object, bytes) else b""
                yield Entry(name=raw.decode("utf-8", "surrogateescape"), is_dir=False, size=-1, modified=None)
                continue
            if dirent is None:
                return
            name = dirent.d_name
            if name in (".", ".."):
                continue
            if not _utf8(name):
                # Not a name the platform writes (they are UTF-8 DIDs): reported, and the rest listed.
                yield Entry(name=name, is_dir=False, size=-1, modified=None)
                continue
            yield Entry(
                name=name,
                is_dir=stat_module.S_ISDIR(st.st_mode),
                size=int(st.st_size),
                modified=dt.datetime.fromtimestamp(st.st_mtime, tz=dt.UTC) if st.st_mtime else None,
            )

    def size(self, path: str) -> int:
        """The size of the file ``path``; StorageReadError(absent=True) when the storage has none."""
        return int(self._call("stat", path, self._ctx.stat, self.url(path)).st_size)

    def adler32(self, path: str) -> str:
        """The adler32 of the file's bytes as read now (8 hex digits)."""
        handle = self._call("open", path, self._ctx.open, self.url(path), "r")
        value = 1
        while True:
            # read_bytes: gfal2's read() decodes what it read as UTF-8.
            chunk = self._call("read", path, handle.read_bytes, READ_CHUNK)
            if not chunk:
                break
            value = zlib.adler32(chunk, value)
        return f"{value & 0xFFFFFFFF:08x}"


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def is_bad_name(entry: Entry) -> bool:
    """An entry whose name is not UTF-8 (``list_directory`` yields it with size -1)."""
    return entry.size < 0
