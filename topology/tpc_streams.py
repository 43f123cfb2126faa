"""How many TCP streams one third-party copy runs, per scheme (pure).

Measured with the local XRootD 5.5.3 sites, gfal2 2.21 and davix 0.8 (docs/transfers.md, "What runs on
the wire"; tests/integration/test_streams_on_the_wire.py counts them):

- root:// (XRootD TPC): the destination's pull program gets ``-S N``, N being the stream count of the
  client's XrdCl (its process-wide ``SubStreamsPerChannel``; gfal2's ``nbstreams`` does not reach it, so
  the transfer service sets it for the copy). XRootD caps N at 15 (``ofs.tpc``'s default streams maximum),
  as do XrdCl's sub-streams and ``xrdcp-wan``.
- davs:// (HTTP-TPC): davix asks with ``X-Number-Of-Streams: N``; XrdHttpTPC pulls the file in 16 MiB
  blocks over at most N connections, so a file runs no more streams than it has blocks.
"""

from __future__ import annotations

import math

ROOT_TPC_MAX_STREAMS = 15
HTTP_TPC_BLOCK_BYTES = 16 * 1024 * 1024
# What every scheme honours for one file: a plan never asks a file for more.
MAX_STREAMS_PER_FILE = ROOT_TPC_MAX_STREAMS
ROOT_SCHEMES = ("root", "xroot")


def pull_block_bytes(scheme: str) -> int:
    """The block size a destination pulls a file in by this scheme, one stream per block in flight
    (HTTP-TPC: 16 MiB); 0 where any file runs the streams asked (XRootD TPC)."""
    return 0 if scheme in ROOT_SCHEMES else HTTP_TPC_BLOCK_BYTES


def block_limited(streams: int, file_bytes: float, block_bytes: float) -> int:
    """``streams``, but no more than the file has blocks when it is pulled in blocks (at least 1)."""
    if block_bytes > 0:
        streams = min(streams, math.ceil(file_bytes / block_bytes - 1e-9))
    return max(1, streams)


def streams_on_the_wire(scheme: str, asked: int | None, file_bytes: int | None = None) -> int:
    """The TCP streams that carry one file's data when ``asked`` streams are asked for (at least 1).

    ``file_bytes`` unknown (None): no block limit is applied for HTTP-TPC."""
    streams = max(1, int(asked or 1))
    if scheme in ROOT_SCHEMES:
        return min(streams, ROOT_TPC_MAX_STREAMS)
    if file_bytes is None:
        return streams
    return block_limited(streams, file_bytes, pull_block_bytes(scheme))


def streams_per_file(lane_streams: int, concurrent_files: int) -> int:
    """A lane's streams shared by its concurrent files (rounded up: each file needs one), capped at what
    every scheme honours."""
    share = math.ceil(max(1, lane_streams) / max(1, concurrent_files))
    return min(MAX_STREAMS_PER_FILE, share)
