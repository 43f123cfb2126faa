"""A TCP forwarder that runs inside a long-haul site's namespace: a connection to 127.0.0.1:<port> there is
carried to <address>:<port> on the host. A site in its namespace then reaches a token issuer that the host
serves on loopback, by the URL the issuer's tokens name (https://127.0.0.1:<port>/...): TLS passes through
untouched, so the site verifies the issuer's certificate for 127.0.0.1 as on the host. This is the site's
path to its issuer over the general internet, not the emulated data path (localnet/longhaul.py).

Run as a file (``python forwarder.py <port> <address>:<port>``): it imports nothing of the project."""

from __future__ import annotations

import asyncio
import sys

CHUNK = 65536


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def _serve(port: int, target_host: str, target_port: int) -> None:
    async def carry(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(target_host, target_port)
        except OSError as exc:
            print(f"forwarder: {target_host}:{target_port} refused: {exc}", file=sys.stderr, flush=True)
            writer.close()
            return
        await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))

    server = await asyncio.start_server(carry, "127.0.0.1", port)
    print(f"forwarder: 127.0.0.1:{port} -> {target_host}:{target_port}", flush=True)
    async with server:
        await server.serve_forever()


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: forwarder.py <port> <address>:<port>", file=sys.stderr)
        return 2
    host, _, target_port = argv[1].rpartition(":")
    asyncio.run(_serve(int(argv[0]), host, int(target_port)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
