"""A TCP forwarder that carries a site's connections to its token issuer from inside a network namespace.

The long-haul network (localnet/longhaul.py) runs it inside a site's namespace: a connection to
127.0.0.1:<port> there is carried to <address>:<port> on the host, over the network's host link. The WAN
measurement harness (bench/wan/xrdsite.py) has namespaces with no link to the host at all: there a pair of
forwarders meet at a unix socket, which the shared file system carries across namespaces (one inside the
namespace from 127.0.0.1:<port> to ``unix:<socket>``, one on the host from ``unix:<socket>`` to
127.0.0.1:<port>). Either way a site reaches the issuer by the URL its tokens name
(https://127.0.0.1:<port>/...) and TLS passes through untouched, so the site verifies the issuer's
certificate for 127.0.0.1 as on the host. This is the site's path to its issuer over the general internet,
not the emulated data path.

Run as a file (``python forwarder.py LISTEN TARGET``, each ``<address>:<port>``, ``unix:<path>``, or for
LISTEN a bare port on 127.0.0.1): it imports nothing of the project."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

CHUNK = 65536
UNIX = "unix:"

Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]


def parse_endpoint(text: str) -> tuple[str, int | None]:
    """``(address, port)`` of ``<address>:<port>`` or a bare port (on 127.0.0.1); ``(path, None)`` of
    ``unix:<path>``. ValueError names what is wrong."""
    if text.startswith(UNIX):
        path = text[len(UNIX) :]
        if not path.startswith("/"):
            raise ValueError(f"{text}: a unix socket is named by its absolute path")
        return path, None
    host, _, port = text.rpartition(":")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{text}: not <address>:<port>, a port or unix:<path>")
    return host or "127.0.0.1", int(port)


def connector(target: str) -> Callable[[], Awaitable[Streams]]:
    """How to open a connection to ``target``."""
    address, port = parse_endpoint(target)
    if port is None:
        return lambda: asyncio.open_unix_connection(address)
    return lambda: asyncio.open_connection(address, port)


async def _pipe(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, back: asyncio.StreamWriter
) -> None:
    """Carry one direction to its end, then half-close it (the other direction may still have data to
    come back: a client that shuts its sending side waits for the answer); an error ends both (``back``
    is the other direction's writer)."""
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, asyncio.IncompleteReadError, OSError):
        writer.close()
        back.close()


async def _serve(listen: str, target: str) -> None:
    open_target = connector(target)

    async def carry(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await open_target()
        except OSError as exc:
            print(f"forwarder: {target} refused: {exc}", file=sys.stderr, flush=True)
            writer.close()
            return
        await asyncio.gather(
            _pipe(reader, upstream_writer, writer), _pipe(upstream_reader, writer, upstream_writer)
        )
        writer.close()
        upstream_writer.close()

    address, port = parse_endpoint(listen)
    if port is None:
        if os.path.exists(address):
            os.unlink(address)  # a socket left by a forwarder that was killed
        server = await asyncio.start_unix_server(carry, address)
        os.chmod(address, 0o600)  # only this account's processes may use the issuer's path
        shown = f"{UNIX}{address}"
    else:
        server = await asyncio.start_server(carry, address, port)
        shown = f"{address}:{port}"
    print(f"forwarder: {shown} -> {target}", flush=True)
    async with server:
        await server.serve_forever()


def wait_until_listening(
    log: Path, alive: Callable[[], bool], name: str, *, since: int = 0, timeout: float = 10
) -> None:
    """Until the forwarder that writes ``log`` says it listens (its first line, after byte ``since``: a log
    may be appended to); one that exited (``alive()`` false) is reported with its log's end (a port it may
    not bind, a namespace that is gone). RuntimeError naming ``name`` otherwise."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        said = log.read_bytes()[since:].decode(errors="replace") if log.exists() else ""
        if "forwarder: " in said and " -> " in said:
            return
        if not alive():
            tail = " | ".join(said.strip().splitlines()[-2:])
            raise RuntimeError(f"{name} exited at its start: {tail}")
        time.sleep(0.05)
    raise RuntimeError(f"{name} did not start listening within {timeout:.0f} s")


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: forwarder.py LISTEN TARGET  (each <address>:<port> or unix:<path>)", file=sys.stderr)
        return 2
    try:
        parse_endpoint(argv[0])
        parse_endpoint(argv[1])
    except ValueError as exc:
        print(f"forwarder: {exc}", file=sys.stderr)
        return 2
    asyncio.run(_serve(argv[0], argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
